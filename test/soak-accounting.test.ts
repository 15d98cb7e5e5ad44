/**
 * The soak's accounting (scripts/soak/, `npm run soak`): the host-side ledger
 * finds lost calls and duplicated terminals, the client tally finds requests
 * without an answer or with two and failed honest calls, the plan is
 * deterministic and reaches every kind, and the registry's `onCallAccepted`
 * hook pairs with `onCallFinished` once per call.
 */
import { describe, expect, it } from 'vitest';
import { defineNativeTool } from '../host/index.js';
import { CallLedger } from '../scripts/soak/ledger.js';
import { CLIENT_ABORTED, ClientTally, NO_ANSWER } from '../scripts/soak/outcome.js';
import { KINDS, plannedCall } from '../scripts/soak/plan.js';
import { verdict } from '../scripts/soak/report.js';
import { makeRegistry } from './helpers.js';

describe('the soak ledger', () => {
  it('counts accepted calls, terminals and refusals, and finds lost calls and duplicated terminals', () => {
    const ledger = new CallLedger(10);
    ledger.accepted('soak-0');
    ledger.terminal('soak-0', 'echo', 'ok');
    ledger.accepted('soak-1'); // lost: no terminal
    ledger.accepted('soak-2');
    ledger.terminal('soak-2');
    ledger.terminal('soak-2'); // duplicated
    ledger.terminal('soak-3'); // refused before acceptance
    ledger.accepted('someone-else');
    ledger.terminal('someone-else');
    ledger.accepted('soak-42'); // past the arrays: counted in the map
    const totals = ledger.totals();
    expect(totals).toMatchObject({ accepted: 5, terminals: 5, refused: 1, open: 2, duplicated: 1, acceptedTwice: 0, foreign: 2 });
    expect(totals.examples.open).toEqual(['soak-1', 'soak-42']);
    expect(totals.examples.duplicated).toEqual(['soak-2']);
    expect(totals.byTool).toEqual({ echo: { ok: 1 } });
  });
});

describe('the soak client tally', () => {
  const honest = KINDS.find((kind) => kind.category === 'honest' && kind.answer !== undefined)!;
  const cancelled = KINDS.find((kind) => kind.category === 'cancelled')!;

  it('fails a run with a missing answer, a duplicated one, or an honest call that did not answer right', () => {
    const tally = new ClientTally();
    tally.record({ n: 0, channel: 'library', kind: honest.name, code: 'ok', answers: 1, ms: 1 });
    tally.record({ n: 1, channel: 'mcp', kind: honest.name, code: NO_ANSWER, answers: 0, ms: 1 });
    tally.record({ n: 2, channel: 'grpc', kind: honest.name, code: 'ok', answers: 2, ms: 1 });
    tally.record({ n: 3, channel: 'grpc', kind: honest.name, code: 'TOOL_CRASHED', answers: 1, ms: 1 });
    tally.record({ n: 4, channel: 'mcp', kind: cancelled.name, code: CLIENT_ABORTED, answers: 1, ms: 1 });
    tally.record({ n: 5, channel: 'library', kind: cancelled.name, code: 'INTERNAL', answers: 1, ms: 1 });
    const client = tally.totals();
    expect(client).toMatchObject({ answered: 5, missing: 1, duplicated: 1, honestFailed: 2, unexpected: 1 });
    expect(client.byChannel.grpc).toMatchObject({ calls: 2, ok: 1, errors: 1 });
    const failures = verdict({
      options: { calls: 6, concurrency: 1, maxSeconds: 1, seed: 1, mcpSessions: 1, grpcChannels: 1 },
      machine: { cpus: 1, node: process.version, loadAverage: [0, 0, 0] },
      issued: 6,
      stoppedByDeadline: false,
      seconds: 1,
      hostDied: undefined,
      ledger: new CallLedger(6).totals(),
      inFlightAtEnd: 0,
      client,
      samples: { peak: { rssBytes: 0, heapUsedBytes: 0, handles: 0, fds: 0, inFlight: 0 } },
      timeline: [],
    });
    expect(failures).toEqual([
      '1 requests got no answer',
      '1 requests got more than one terminal answer',
      '2 honest calls failed',
      '1 calls ended INTERNAL',
    ]);
  });
});

describe('the soak plan', () => {
  it('is the same for the same call and seed, spreads calls over the channels and reaches every kind', () => {
    expect(plannedCall(123, 7)).toEqual(plannedCall(123, 7));
    const calls = Array.from({ length: 5000 }, (_, n) => plannedCall(n, 1));
    expect(new Set(calls.map((call) => call.kind.name))).toEqual(new Set(KINDS.map((kind) => kind.name)));
    expect(calls.filter((call) => call.channel === 'grpc')).toHaveLength(1666);
  });
});

describe('onCallAccepted', () => {
  it('is told once per accepted call, and each accepted call ends with one terminal; refused calls are not accepted', async () => {
    const registry = makeRegistry();
    registry.register(defineNativeTool({ name: 'twice', description: 'Doubles.', inputSchema: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] }, run: (args) => ({ n: (args as { n: number }).n * 2 }) }));
    const ledger = new CallLedger(4);
    registry.onCallAccepted((_tool, callId) => ledger.accepted(callId));
    registry.onCallFinished((_tool, event) => ledger.terminal(event.callId));
    await registry.execute('twice', { n: 1 }, { callId: 'soak-0' });
    await expect(registry.execute('twice', { n: 'x' }, { callId: 'soak-1' })).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    await expect(registry.execute('nope', {}, { callId: 'soak-2' })).rejects.toMatchObject({ code: 'TOOL_NOT_FOUND' });
    expect(ledger.totals()).toMatchObject({ accepted: 1, terminals: 3, refused: 2, open: 0, duplicated: 0 });
    await registry.close();
  });
});
