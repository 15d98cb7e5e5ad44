import { afterEach, describe, expect, it } from 'vitest';
import { ToolRegistry, ToolhostError, createRegistry, defineNativeTool, silentLogger, toolError } from '../host/index.js';
import { backoffDelay } from '../host/core/retry.js';
import { collect, fixture, hasCGuests, makeRegistry } from './helpers.js';

/** A native tool that crashes `failures` times, then answers. */
function flaky(failures: number, idempotent: boolean) {
  let calls = 0;
  return defineNativeTool({
    name: 'flaky',
    description: 'Crashes a few times, then works.',
    inputSchema: {},
    idempotent,
    run() {
      calls += 1;
      if (calls <= failures) throw new ToolhostError('TOOL_CRASHED', `crash ${calls}`);
      return { calls };
    },
  });
}

const registries: ToolRegistry[] = [];
afterEach(async () => {
  await Promise.all(registries.splice(0).map((r) => r.close()));
});
function nativeRegistry(...tools: ReturnType<typeof defineNativeTool>[]): ToolRegistry {
  const registry = new ToolRegistry({ logger: silentLogger, retry: { baseMs: 5, capMs: 20 } });
  for (const tool of tools) registry.register(tool);
  registries.push(registry);
  return registry;
}

describe('retries', () => {
  it('retry a transient failure of an idempotent tool up to max_retries, counting attempts', async () => {
    const registry = nativeRegistry(flaky(2, true));
    const events = await collect(registry.stream('flaky', {}, { policy: { max_retries: 2, backoff: 'exponential' } }));
    expect(events.at(-1)).toMatchObject({ type: 'result', data: { calls: 3 }, accounting: { attempts: 3 } });
    const notices = events.filter((event) => event.type === 'log' && event.message.includes('retrying'));
    expect(notices).toHaveLength(2);
  });

  it('give up after max_retries with the last failure', async () => {
    const registry = nativeRegistry(flaky(5, true));
    const result = await registry.execute('flaky', {}, { policy: { max_retries: 1 } });
    expect(result.error).toMatchObject({ code: 'TOOL_CRASHED', message: 'crash 2' });
    expect(result.accounting?.attempts).toBe(2);
  });

  it('never retry a tool that is not idempotent', async () => {
    const registry = nativeRegistry(flaky(1, false));
    const result = await registry.execute('flaky', {}, { policy: { max_retries: 3 } });
    expect(result.error).toMatchObject({ code: 'TOOL_CRASHED' });
    expect(result.accounting?.attempts).toBe(1);
  });

  it('never retry a failure that is not transient', async () => {
    let calls = 0;
    const registry = nativeRegistry(defineNativeTool({
      name: 'fails', description: 'x', inputSchema: {}, idempotent: true,
      run() {
        calls += 1;
        throw toolError('NOPE', 'no');
      },
    }));
    const result = await registry.execute('fails', {}, { policy: { max_retries: 3 } });
    expect(result.error).toMatchObject({ code: 'TOOL_ERROR' });
    expect(calls).toBe(1);
  });

  it('back off exponentially, with jitter between half and all of the nominal delay, up to the cap', () => {
    const options = { baseMs: 100, capMs: 1000 };
    expect(backoffDelay(1, options, () => 0)).toBe(50);
    expect(backoffDelay(1, options, () => 1)).toBe(100);
    expect(backoffDelay(3, options, () => 1)).toBe(400);
    expect(backoffDelay(10, options, () => 0.5)).toBe(750);
  });

  it.runIf(hasCGuests)('give a crashed guest a fresh instance on every attempt', async () => {
    const registry = makeRegistry({ retry: { baseMs: 5, capMs: 20 } });
    registries.push(registry);
    await registry.registerWasmTools(fixture('hostile'));
    const result = await registry.execute('trap', {}, { policy: { max_retries: 2 } });
    expect(result.error).toMatchObject({ code: 'TOOL_CRASHED' });
    expect(result.accounting?.attempts).toBe(3);
  });

  it.runIf(hasCGuests)('retry OVERLOADED until the pool has room', async () => {
    const registry = makeRegistry({ retry: { baseMs: 200, capMs: 2000 }, sandbox: { threads: 1, maxQueue: 0 } });
    registries.push(registry);
    await registry.registerWasmTools(fixture('hostile'));
    const busy = registry.execute('sleep_for', { ms: 300 });
    await new Promise((resolve) => setTimeout(resolve, 50));
    const result = await registry.execute('honest', { n: 3 }, { policy: { max_retries: 5 } });
    expect(result.structuredContent).toEqual({ ok: true, sum: 6 });
    expect(result.accounting?.attempts).toBeGreaterThan(1);
    expect((await busy).isError).toBe(false);
  });
});

describe.runIf(hasCGuests)('isolation modes', () => {
  it('conversation: reuses an instance within one conversation only', async () => {
    const registry = makeRegistry({ sandbox: { threads: 1 } });
    registries.push(registry);
    await registry.registerWasmTools(fixture('counter'), { isolation: 'conversation' });
    const count = async (conversationId?: string): Promise<unknown> =>
      (await registry.execute('counter', {}, conversationId === undefined ? {} : { conversationId })).structuredContent;
    expect(await count('a')).toEqual({ count: 1 });
    expect(await count('a')).toEqual({ count: 2 });
    expect(await count('b')).toEqual({ count: 1 });
    expect(await count('a')).toEqual({ count: 3 });
    expect(await count()).toEqual({ count: 1 });
    const last = await registry.execute('counter', {}, { conversationId: 'b' });
    expect(last.accounting).toMatchObject({ isolation: 'conversation', instance: 'reused' });
  });

  it('call: never reuses; worker: reuses across conversations', async () => {
    const registry = makeRegistry({ sandbox: { threads: 1 } });
    registries.push(registry);
    await registry.registerWasmTools(fixture('counter'));
    const worker = makeRegistry({ sandbox: { threads: 1 } });
    registries.push(worker);
    await worker.registerWasmTools(fixture('counter'), { isolation: 'worker' });
    for (const conversationId of ['a', 'b', 'a']) {
      expect((await registry.execute('counter', {}, { conversationId })).structuredContent).toEqual({ count: 1 });
    }
    const counts = [];
    for (const conversationId of ['a', 'b', 'a']) counts.push((await worker.execute('counter', {}, { conversationId })).structuredContent);
    expect(counts).toEqual([{ count: 1 }, { count: 2 }, { count: 3 }]);
  });
});
