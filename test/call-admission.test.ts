/**
 * Admission decides in the documented order: lookup → policy → validate → ids,
 * and a policy refusal is audited where it is decided.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ToolRegistry, defineNativeTool, silentLogger, type ToolEvent } from '../host/index.js';
import { MemoryAuditLog } from '../host/policy/memory-audit-log.js';
import { collect } from './helpers.js';

let registry: ToolRegistry;
let audit: MemoryAuditLog;
let ran = 0;

function setup(): void {
  audit = new MemoryAuditLog();
  registry = new ToolRegistry({ logger: silentLogger, audit, defaults: { maxWallMs: 5_000 } });
  registry.register(defineNativeTool({
    name: 'strict',
    description: 'Takes one integer.',
    inputSchema: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'], additionalProperties: false },
    grant: { network: 'EGRESS_RESTRICTED' },
    run: ({ n }: { n: number }) => {
      ran += 1;
      return { n };
    },
  }) as ReturnType<typeof defineNativeTool>);
}

afterEach(async () => {
  await registry.close();
});

async function rejection(name: string, args: unknown, options: Parameters<ToolRegistry['stream']>[2] = {}): Promise<ToolEvent & { type: 'error' }> {
  const events = await collect(registry.stream(name, args, options));
  expect(events).toHaveLength(1);
  const [event] = events;
  expect(event).toMatchObject({ type: 'error', stage: 'rejected' });
  return event as ToolEvent & { type: 'error' };
}

describe('admission', () => {
  it('looks the tool up first: an unknown tool is TOOL_NOT_FOUND whatever else is wrong', async () => {
    setup();
    const event = await rejection('strict_v2', 'not even an object', { policy: { network_policy: 'FULL_ACCESS' } });
    expect(event.code).toBe('TOOL_NOT_FOUND');
    expect(event.message).toContain('"strict"');
    expect(audit.entries).toEqual([]);
  });

  it('decides the policy before it validates the arguments, and audits the denial with its labels', async () => {
    setup();
    const event = await rejection('strict', { n: 'nope' }, { callId: 'a-1', policy: { network_policy: 'FULL_ACCESS' } });
    expect(event.code).toBe('PERMISSION_DENIED');
    expect(audit.entries).toEqual([expect.objectContaining({ callId: 'a-1', tool: 'strict', decision: 'denied', code: 'PERMISSION_DENIED', network: 'FULL_ACCESS', privilege: 'MINIMAL' })]);
  });

  it('audits a request above a host ceiling as a denial', async () => {
    setup();
    const event = await rejection('strict', { n: 1 }, { callId: 'a-2', policy: { timeout: '10s' } });
    expect(event.code).toBe('PERMISSION_DENIED');
    expect(event.details).toMatchObject({ field: 'timeout', ceiling: 5_000 });
    expect(audit.entries).toEqual([expect.objectContaining({ callId: 'a-2', decision: 'denied', code: 'PERMISSION_DENIED' })]);
  });

  it('refuses a policy that does not parse as INVALID_INPUT, without an audit entry', async () => {
    setup();
    const event = await rejection('strict', { n: 1 }, { policy: { network_policy: 'LAN_ONLY' } });
    expect(event.code).toBe('INVALID_INPUT');
    expect(audit.entries).toEqual([]);
  });

  it('validates the arguments once the policy allows the call, with the ajv path', async () => {
    setup();
    const event = await rejection('strict', { n: 'nope' });
    expect(event.code).toBe('INVALID_INPUT');
    expect(event.message).toContain('args/n');
  });

  it('checks the call id last: empty, or already in flight', async () => {
    setup();
    expect((await rejection('strict', { n: 1 }, { callId: '' })).code).toBe('INVALID_INPUT');
    registry.register(defineNativeTool({ name: 'slow', description: 'Waits.', inputSchema: {}, run: (_args, ctx) => new Promise((_resolve, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason as Error))) }));
    const first = registry.stream('slow', {}, { callId: 'twice' });
    const second = await rejection('slow', {}, { callId: 'twice' });
    expect(second.message).toContain('already in flight');
    expect(first.cancel()).toBe('CANCELLED');
    expect((await collect(first)).at(-1)).toMatchObject({ type: 'error', code: 'CANCELLED' });
  });

  it('starts nothing for a refused call', async () => {
    setup();
    ran = 0;
    await rejection('strict', { n: 'x' });
    await rejection('strict', { n: 1 }, { policy: { network_policy: 'FULL_ACCESS' } });
    expect(ran).toBe(0);
    expect(registry.inFlight).toBe(0);
  });
});
