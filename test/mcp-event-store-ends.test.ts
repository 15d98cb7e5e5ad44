/**
 * A session's event store knows when a stream is over (host/servers/mcp-event-store.ts `plan`): its response was kept,
 * or its request was cancelled (`end`), so a resume of it ends instead of waiting for a response that will not come.
 * A response too large to keep is kept as a small error saying so: its stream's end is never lost to the byte bound.
 */
import { describe, expect, it } from 'vitest';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { SessionEventStore } from '../host/servers/mcp-event-store.js';

const progress = (n: number): JSONRPCMessage => ({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 't', progress: n } });

describe('a session\'s event store and the end of its streams', () => {
  it('reports a stream ended once its response is kept, with the messages after the event resumed from', async () => {
    const store = new SessionEventStore({ maxEvents: 100, maxBytes: 100_000 });
    const priming = await store.storeEvent('s1', {} as JSONRPCMessage);
    const first = await store.storeEvent('s1', progress(1));
    expect(await store.plan(priming)).toMatchObject({ streamId: 's1', ended: false, local: true, events: [{ id: first }] });
    const answer = await store.storeEvent('s1', { jsonrpc: '2.0', id: 3, result: {} });
    const plan = await store.plan(first);
    expect(plan?.ended).toBe(true);
    expect(plan?.events.map((event) => event.id)).toEqual([answer]);
    expect(await store.plan(answer)).toMatchObject({ ended: true, events: [] });
  });

  it('reports a cancelled request\'s stream ended, replaying nothing for the end mark', async () => {
    const store = new SessionEventStore({ maxEvents: 100, maxBytes: 100_000 });
    const priming = await store.storeEvent('s2', {} as JSONRPCMessage);
    await store.storeEvent('other', progress(5));
    store.end('s2');
    expect(await store.plan(priming)).toMatchObject({ ended: true, events: [] });
    // Another stream of the session is not affected.
    const other = await store.storeEvent('other', progress(6));
    expect((await store.plan(other))?.ended).toBe(false);
  });

  it('keeps a response larger than resume_bytes as a small error, so its stream still ends', async () => {
    let dropped = 0;
    const store = new SessionEventStore({ maxEvents: 100, maxBytes: 1024 }, (count) => {
      dropped += count;
    });
    const priming = await store.storeEvent('s3', {} as JSONRPCMessage);
    await store.storeEvent('s3', { jsonrpc: '2.0', id: 'big', result: { text: 'x'.repeat(5000) } });
    const plan = await store.plan(priming);
    expect(plan?.ended).toBe(true);
    expect(plan?.events).toHaveLength(1);
    expect(plan?.events[0]?.message).toMatchObject({ id: 'big', error: { data: { code: 'OUTPUT_LIMIT_EXCEEDED', reason: 'resume_window' } } });
    expect(dropped).toBe(1);
  });

  it('finds nothing for an event it does not hold (the resume is refused)', async () => {
    const store = new SessionEventStore({ maxEvents: 2, maxBytes: 100_000 });
    const oldest = await store.storeEvent('s4', progress(1));
    await store.storeEvent('s4', progress(2));
    await store.storeEvent('s4', progress(3));
    expect(await store.plan(oldest)).toBeUndefined();
    expect(await store.plan('not an id')).toBeUndefined();
    expect(await store.plan('s4_999')).toBeUndefined();
  });
});
