/**
 * When several things go wrong at once, one table decides which error a call
 * ends with (host/core/call/precedence.ts).
 */
import { describe, expect, it } from 'vitest';
import { ToolRegistry, ToolhostError, defineNativeTool, silentLogger, toolError, type Tool } from '../host/index.js';
import { ERROR_PRECEDENCE, failureOf, type FailureFacts } from '../host/core/call/precedence.js';
import { HostRefusals } from '../host/core/call/refusals.js';

const base: FailureFacts = { callId: 'c', tool: 't', hardStop: undefined, cancelRequested: false, error: new Error('boom'), networkDenied: [], network: 'DENY_ALL', deltas: 0 };
const denied = [{ url: 'http://10.0.0.1/', reason: 'private address' }];

describe('the error precedence table', () => {
  it('reads, highest first: hard stop, cancel, network refusal, a host refusal the tool ended with, coded error, anything else', () => {
    expect(ERROR_PRECEDENCE.map((rule) => rule.rule.split(':')[0])).toEqual([
      'the host stopped the call (wall clock, or a cancel past its grace)',
      'the caller cancelled',
      'the tool failed (TOOL_ERROR, TOOL_CRASHED) after the network policy refused one of its requests',
      'the tool failed with a refusal the host gave it during the call (its TOOL_ERROR carries the refusal\'s code, e.g. an uncaught refused sample())',
      'a coded error from the runner (the tool\'s TOOL_ERROR; the sandbox\'s CPU, memory, output limits, crash, overload)',
      'anything else thrown',
    ]);
  });

  it('a hard stop beats a cancel, a refusal and the tool\'s own error', () => {
    const timeout = new ToolhostError('TOOL_TIMEOUT', 'too slow');
    expect(failureOf({ ...base, hardStop: timeout, cancelRequested: true, networkDenied: denied, error: toolError('X', 'x') })).toMatchObject({ code: 'TOOL_TIMEOUT', callId: 'c' });
  });

  it('a cancel beats a network refusal, and says whether output was partial', () => {
    expect(failureOf({ ...base, cancelRequested: true, networkDenied: denied, error: toolError('X', 'x'), deltas: 2 })).toEqual({
      code: 'CANCELLED',
      message: 'the call was cancelled by its caller',
      callId: 'c',
      details: { partial: true, deltas: 2 },
    });
  });

  it('a tool failing after a refusal ends NETWORK_DENIED; other coded errors stay as they are', () => {
    expect(failureOf({ ...base, networkDenied: denied, error: new ToolhostError('TOOL_CRASHED', 'trap') })).toMatchObject({ code: 'NETWORK_DENIED', details: { denied, cause: { code: 'TOOL_CRASHED' } } });
    expect(failureOf({ ...base, networkDenied: denied, error: new ToolhostError('CPU_BUDGET_EXCEEDED', 'spent') })).toMatchObject({ code: 'CPU_BUDGET_EXCEEDED' });
    expect(failureOf({ ...base, error: toolError('MINE', 'mine') })).toMatchObject({ code: 'TOOL_ERROR', details: { code: 'MINE' } });
  });

  it('anything else thrown is TOOL_CRASHED with its message', () => {
    expect(failureOf(base)).toEqual({ code: 'TOOL_CRASHED', message: 'tool "t" threw: boom', callId: 'c' });
  });

  it('applies to every runner: a tool that reports a refusal and then fails ends NETWORK_DENIED', async () => {
    const registry = new ToolRegistry({ logger: silentLogger });
    const tool: Tool = {
      name: 'refused',
      description: 'Reports a refused request, then fails.',
      inputSchema: {},
      executionMode: 'native',
      idempotent: false,
      streaming: false,
      async invoke(_args, _ctx, events) {
        events.account({ networkDenied: denied });
        throw toolError('FETCH_FAILED', 'no answer');
      },
    };
    registry.register(tool);
    registry.register(defineNativeTool({ name: 'plain', description: 'Fails.', inputSchema: {}, run: () => Promise.reject(toolError('FETCH_FAILED', 'no answer')) }));
    try {
      expect((await registry.execute('refused', {})).error).toMatchObject({ code: 'NETWORK_DENIED' });
      expect((await registry.execute('plain', {})).error).toMatchObject({ code: 'TOOL_ERROR' });
    } finally {
      await registry.close();
    }
  });

  it('a TOOL_ERROR carrying a refusal the host gave the tool ends with the host\'s refusal; a code it never gave stays the tool\'s', () => {
    const refusals = new HostRefusals();
    refusals.note({ code: 'PERMISSION_DENIED', message: 'the tool\'s grant does not allow sampling (grant.sampling)', details: { reason: 'sampling' } });
    const relayed = new ToolhostError('TOOL_ERROR', 'anything the guest says', { details: { code: 'PERMISSION_DENIED' } });
    expect(failureOf({ ...base, refusals, error: relayed })).toEqual({
      code: 'PERMISSION_DENIED',
      message: 'the tool\'s grant does not allow sampling (grant.sampling) (the tool ended with this refusal)',
      callId: 'c',
      details: { reason: 'sampling', relayedBy: 't' },
    });
    expect(failureOf({ ...base, refusals, error: new ToolhostError('TOOL_ERROR', 'x', { details: { code: 'CLIENT_UNSUPPORTED' } }) })).toMatchObject({ code: 'TOOL_ERROR', details: { code: 'CLIENT_UNSUPPORTED' } });
    expect(failureOf({ ...base, error: relayed })).toMatchObject({ code: 'TOOL_ERROR' });
  });
});
