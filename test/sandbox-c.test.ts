import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolRegistry } from '../host/index.js';
import { CONTAINMENTS, collect, example, fixture, hasCGuests, makeRegistry, terminalCount, types } from './helpers.js';

/** Starts a call that spins until cancelled and resolves once it runs (its first delta); the returned function cancels it and waits for its end. */
async function holdWorker(registry: ToolRegistry, callId: string): Promise<() => Promise<void>> {
  const stream = registry.stream('stream_then_wait', {}, { callId });
  const iterator = stream[Symbol.asyncIterator]();
  for (let next = await iterator.next(); !next.done; next = await iterator.next()) {
    if (next.value.type === 'delta') break;
  }
  return async () => {
    stream.cancel();
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) { /* drain to the terminal event */ }
  };
}

describe.runIf(hasCGuests)('C tools in the sandbox pool', () => {
  let registry: ToolRegistry;
  let reuse: ToolRegistry;
  /** The same tools with the workers in a sandbox process (the state tests run under both). */
  let inProcess: ToolRegistry;
  const containments = { thread: () => registry, process: () => inProcess };

  beforeAll(async () => {
    // Two workers: one test proves state is shared across them.
    registry = makeRegistry({ sandbox: { threads: 2 } });
    await registry.registerWasmTools([example('ctools'), fixture('counter')]);
    reuse = makeRegistry();
    await reuse.registerWasmTools(fixture('counter'), { isolation: 'worker' });
    inProcess = makeRegistry({ sandbox: { threads: 2, containment: 'process' } });
    await inProcess.registerWasmTools(fixture('counter'));
  });
  afterAll(async () => {
    await registry.close();
    await reuse.close();
    await inProcess.close();
  });

  it('runs sha256 and echo through the pool', async () => {
    const sha = await registry.execute('sha256', { text: 'abc' });
    expect(sha.structuredContent).toEqual({ sha256: 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad' });
    const echo = await registry.execute('echo', { a: [1, 2, { b: 'ü' }] });
    expect(echo.structuredContent).toEqual({ a: [1, 2, { b: 'ü' }] });
    expect(echo.accounting).toMatchObject({ isolation: 'call', attempts: 1 });
    // Pristine either way: sha256's instance reset (its worker is the component's home, component-homes.ts), a spare, or new.
    expect(['fresh', 'prewarmed', 'restored']).toContain(echo.accounting?.instance);
  });

  it('delivers the guest\'s events in order, while it runs, with exactly one terminal', async () => {
    const events = await collect(registry.stream('events', {}));
    expect(types(events)).toEqual(['start', 'progress', 'delta', 'delta', 'log', 'progress', 'result']);
    expect(events[1]).toMatchObject({ pct: 0, message: 'start' });
    expect(events[2]).toMatchObject({ data: { i: 0 } });
    expect(events[3]).toMatchObject({ data: { i: 1 } });
    expect(events[4]).toMatchObject({ level: 'info', source: 'guest' });
    expect(events[5]).toMatchObject({ pct: 100, message: 'done' });
    expect(terminalCount(events)).toBe(1);
  });

  it('hands the guest its call context', async () => {
    const result = await registry.execute('context', {}, { callId: 'ctx-1', conversationId: 'conv', agentName: 'agent-7' });
    expect(result.structuredContent).toEqual({ callId: 'ctx-1', conversationId: 'conv', sessionId: null, agentName: 'agent-7' });
  });

  it('does not keep a guest global counter between calls in the default mode', async () => {
    const counts: unknown[] = [];
    for (let i = 0; i < 6; i += 1) counts.push((await registry.execute('counter', {})).structuredContent);
    expect(counts).toEqual(Array.from({ length: 6 }, () => ({ count: 1 })));
  });

  it('keeps the instance, and its globals, when the tool opts into reuse per worker', async () => {
    const first = await reuse.execute('counter', {});
    const second = await reuse.execute('counter', {});
    expect((second.structuredContent as { count: number }).count).toBe((first.structuredContent as { count: number }).count + 1);
    expect(second.accounting).toMatchObject({ instance: 'reused', isolation: 'worker' });
  });

  it.each(CONTAINMENTS)('shares conversation state across workers and hides it from other conversations (%s containment)', async (containment) => {
    const registry = containments[containment]();
    // Placed, not hoped for: a guest that runs until cancelled holds one worker while the write runs on the
    // other, then holds the writer while the read runs on the first (the queue gives a task only to an idle worker).
    const releaseFirst = await holdWorker(registry, `hold-1-${containment}`);
    const set = await registry.execute('state', { op: 'set', key: 'colour', value: '"teal"' }, { conversationId: 'conv-a' });
    expect(set.structuredContent).toEqual({ ok: true });
    const releaseWriter = await holdWorker(registry, `hold-2-${containment}`);
    await releaseFirst();
    const read = await registry.execute('state', { op: 'get', key: 'colour' }, { conversationId: 'conv-a' });
    await releaseWriter();
    expect(read.structuredContent).toEqual({ value: '"teal"' });
    expect(read.accounting?.workerThreadId).toEqual(expect.any(Number));
    expect(read.accounting?.workerThreadId).not.toBe(set.accounting?.workerThreadId);
    const other = await registry.execute('state', { op: 'get', key: 'colour' }, { conversationId: 'conv-b' });
    expect(other.structuredContent).toEqual({ value: null });
  });

  it.each(CONTAINMENTS)('reports a refused set-state back to the guest as an error it can handle (%s containment)', async (containment) => {
    const result = await containments[containment]().execute('state', { op: 'set', key: 'k', value: 'not json' }, { conversationId: 'c' });
    expect(result.isError).toBe(true);
    expect(result.error).toMatchObject({ code: 'TOOL_ERROR', details: { code: 'STATE_ERROR' } });
    expect(result.error?.message).toContain('not JSON');
  });

  it('maps the tool\'s own error to TOOL_ERROR and keeps its code and details', async () => {
    const result = await registry.execute('fail', {});
    expect(result.error).toEqual({ code: 'TOOL_ERROR', message: 'it failed', details: { code: 'MY_CODE', details: { why: 'asked' } }, callId: expect.any(String) });
  });

  it('ends a trapping call with TOOL_CRASHED, and the next call runs normally', async () => {
    const crashed = await registry.execute('trap', {});
    expect(crashed.error).toMatchObject({ code: 'TOOL_CRASHED' });
    expect(crashed.error?.message).toMatch(/trapped/);
    const after = await registry.execute('sha256', { text: '' });
    expect(after.structuredContent).toEqual({ sha256: 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855' });
  });

  it('validates input against the guest\'s schema in the worker, before the guest runs', async () => {
    const error = await registry.execute('sha256', { text: 42 }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'INVALID_INPUT', details: { errors: [expect.objectContaining({ path: '/text' })] } });
  });

  it('collects every worker\'s garbage on request (the benchmark\'s no-growth check), and calls go on after it', async () => {
    await Promise.all([registry.execute('echo', { i: 1 }), registry.execute('echo', { i: 2 })]);
    const [heaps, during] = await Promise.all([registry.collectWorkerGarbage(), registry.execute('echo', { during: true })]);
    expect(heaps?.map((heap) => heap.threadId).sort()).toHaveLength(2);
    expect(new Set(heaps?.map((heap) => heap.threadId)).size).toBe(2);
    for (const heap of heaps ?? []) {
      expect(heap.collected).toBe(true);
      expect(heap.heapUsedBytes).toBeGreaterThan(0);
      expect(heap.heapTotalBytes).toBeGreaterThanOrEqual(heap.heapUsedBytes);
    }
    expect(during.structuredContent).toEqual({ during: true });
    // With process containment the pool is in another process: nothing to read from here.
    expect(await inProcess.collectWorkerGarbage()).toBeUndefined();
  });
});

describe.runIf(hasCGuests)('spare instances', () => {
  it('are prepared while a worker is idle, so the next call does not wait for instantiation', async () => {
    const registry = makeRegistry({ sandbox: { threads: 1 } });
    try {
      await registry.registerWasmTools(example('ctools'));
      await registry.execute('echo', {});
      const seen: Array<string | undefined> = [];
      for (let i = 0; i < 5; i += 1) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        const result = await registry.execute('echo', { i });
        seen.push(result.accounting?.instance);
        if (result.accounting?.instance === 'prewarmed' || result.accounting?.instance === 'restored') expect(result.accounting.instantiateMs).toBe(0);
      }
      // A spare is a new instance, or the previous call's reset to its snapshot (echo leaves memory its size and makes no resource).
      expect(seen.every((source) => source === 'prewarmed' || source === 'restored')).toBe(true);
      expect(seen).toContain('restored');
    } finally {
      await registry.close();
    }
  });
});
