/**
 * A call's context and sink (host/core/call/call-views.ts): what a tool reads of them, and the shape that keeps the
 * host's garbage collection cheap. Getters made per call in an object literal gave every call hidden classes of its own,
 * and V8's young-generation GC then kept every call's objects alive into the old generation (2.4 KiB a call); the
 * getters are the prototype's, shared by every call, and what a tool may take off the object still works on its own.
 */
import { describe, expect, it } from 'vitest';
import { ToolRegistry, silentLogger, type Tool, type ToolContext } from '../host/index.js';
import type { RunnerSink } from '../host/core/events.js';

function capturingTool(seen: Array<{ ctx: ToolContext; sink: RunnerSink }>): Tool {
  return {
    name: 'capture',
    description: 'Keeps its context and sink, and uses what a tool may take off them.',
    inputSchema: { type: 'object' },
    executionMode: 'native',
    idempotent: true,
    streaming: false,
    source: 'native',
    async invoke(_args, ctx, sink) {
      seen.push({ ctx, sink });
      const { getState, setState, signal, callId } = ctx;
      await setState('n', seen.length);
      const { progress } = sink;
      progress(50, 'half');
      return { output: { n: await getState('n', 0), aborted: signal.aborted, callId } };
    },
  };
}

describe('a call\'s context and sink', () => {
  it('share their getters between calls, and work when a tool takes their methods off them', async () => {
    const registry = new ToolRegistry({ logger: silentLogger });
    const seen: Array<{ ctx: ToolContext; sink: RunnerSink }> = [];
    registry.register(capturingTool(seen));
    const first = await registry.execute('capture', {}, { callId: 'view-1', conversationId: 'c1' });
    const second = await registry.execute('capture', {}, { callId: 'view-2' });
    expect(first.structuredContent).toEqual({ n: 1, aborted: false, callId: 'view-1' });
    expect(second.structuredContent).toEqual({ n: 2, aborted: false, callId: 'view-2' });
    const [a, b] = seen as [{ ctx: ToolContext; sink: RunnerSink }, { ctx: ToolContext; sink: RunnerSink }];
    for (const name of ['signal', 'state']) {
      expect(Object.getOwnPropertyDescriptor(a.ctx, name)).toBeUndefined();
      expect(Object.getPrototypeOf(a.ctx)).toBe(Object.getPrototypeOf(b.ctx));
    }
    expect(Object.getOwnPropertyDescriptor(a.sink, 'hardSignal')).toBeUndefined();
    expect(Object.getPrototypeOf(a.sink)).toBe(Object.getPrototypeOf(b.sink));
    // What a call was told stays its own: its id, its conversation, and a signal aborted once it is over.
    expect(a.ctx.conversationId).toBe('c1');
    expect('conversationId' in b.ctx).toBe(false);
    expect(a.ctx.signal.aborted).toBe(true);
    expect(a.sink.hardSignal.aborted).toBe(false);
    await registry.close();
  });
});
