/**
 * The default isolation's promise: nothing a call leaves behind is visible to
 * the next call. A hostile guest (fixtures/guests/c/smuggler.c) plants a
 * secret in every channel it can reach (static data, the heap, the
 * environment, a half-written stdout line, grown memory, a moved stack
 * pointer) and ends in every way a call can end; the next call on the same
 * worker must see what a brand-new instance sees. The same plant in
 * `worker` isolation does get through, which shows the probe can see it.
 *
 * A used instance may be reset to the snapshot taken before its first call
 * instead of replaced (worker/instance-snapshot.ts): the plants that leave
 * memory its size and keep no handle but stdout's are reset (the probe then
 * runs on a `restored` instance and must still see nothing), and the plants a
 * reset cannot undo (grown memory, a handle to stdin, a trap) are replaced.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolEvent, ToolRegistry } from '../host/index.js';
import { collect, fixture, hasCGuests, makeRegistry } from './helpers.js';

type InstanceSource = 'fresh' | 'prewarmed' | 'restored' | 'reused' | undefined;

interface Probe {
  static: string | null;
  heap: string | null;
  env: string | null;
  pages: number;
  stack: number;
  calls: number;
}

async function probe(on: ToolRegistry, args: { print?: boolean } = {}): Promise<{ probe: Probe; events: ToolEvent[]; instance: InstanceSource }> {
  const events = await collect(on.stream('probe', args));
  const last = events.at(-1);
  if (last?.type !== 'result') throw new Error(`probe failed: ${JSON.stringify(last)}`);
  return { probe: last.data as Probe, events, instance: last.accounting?.instance };
}

describe.runIf(hasCGuests)('a fresh instance for every call', () => {
  // One worker: the plant and the probe always run in the same thread.
  let registry: ToolRegistry;
  let reused: ToolRegistry;
  let pristine: Probe;

  const expectNothingLeaked = async (secret: string): Promise<void> => {
    // Twice: the first probe may use the spare made before the plant, the second one made after it.
    for (let i = 0; i < 2; i += 1) {
      const { probe: seen, events } = await probe(registry);
      expect(seen).toEqual(pristine);
      expect(JSON.stringify(events)).not.toContain(secret);
    }
  };

  beforeAll(async () => {
    registry = makeRegistry();
    await registry.registerWasmTools(fixture('smuggler'));
    reused = makeRegistry();
    await reused.registerWasmTools(fixture('smuggler'), { isolation: 'worker' });
    pristine = (await probe(registry)).probe;
  });
  afterAll(async () => {
    await registry.close();
    await reused.close();
  });

  it('starts from what a new instance holds: no secret, one call', () => {
    expect(pristine).toMatchObject({ static: null, heap: null, env: null, calls: 1 });
  });

  it('shows a reused instance leaking every channel, so the probe can see a leak', async () => {
    const before = (await probe(reused)).probe;
    const planted = await reused.execute('plant', { secret: 'reused-secret' });
    expect(planted.isError).toBe(false);
    const { probe: seen, events } = await probe(reused);
    expect(seen).toMatchObject({ static: 'reused-secret', heap: 'reused-secret', env: 'reused-secret', calls: before.calls + 2 });
    expect(seen.pages).toBe(before.pages + 4);
    // The half-written stdout line stays in libc's buffer, and comes out with the probe's own line.
    expect(JSON.stringify(events)).toContain('partial line reused-secret');
  });

  it('leaks nothing after a call that returns normally', async () => {
    const planted = await registry.execute('plant', { secret: 'returned-secret' });
    expect(planted.isError).toBe(false);
    await expectNothingLeaked('returned-secret');
  });

  it('leaks nothing after a trap deep in the stack (the stack pointer is a mutable global)', async () => {
    const planted = await registry.execute('plant', { secret: 'trap-secret', end: 'trap' });
    expect(planted.error).toMatchObject({ code: 'TOOL_CRASHED' });
    await expectNothingLeaked('trap-secret');
  });

  it('leaks nothing after a stack overflow', async () => {
    const planted = await registry.execute('plant', { secret: 'overflow-secret', end: 'overflow' });
    expect(planted.error).toMatchObject({ code: 'TOOL_CRASHED' });
    await expectNothingLeaked('overflow-secret');
  });

  it('leaks nothing after the guest calls exit', async () => {
    const planted = await registry.execute('plant', { secret: 'exit-secret', end: 'exit' });
    expect(planted.error).toMatchObject({ code: 'TOOL_CRASHED' });
    await expectNothingLeaked('exit-secret');
  });

  it('leaks nothing after a cooperative cancel', async () => {
    const stream = registry.stream('plant', { secret: 'cancel-secret', end: 'spin' }, { callId: 'smuggle-cancel' });
    const cancel = setTimeout(() => stream.cancel(), 100);
    const events = await collect(stream);
    clearTimeout(cancel);
    // The guest spins until it sees the cancel flag, then returns: a result means it saw it.
    expect(events.at(-1)?.type).toBe('result');
    await expectNothingLeaked('cancel-secret');
  });

  it('leaks nothing after a CPU budget kill', async () => {
    const planted = await registry.execute('plant', { secret: 'budget-secret', end: 'loop' }, { policy: { budget_cpu_ms: 50, timeout: '10s' } });
    expect(planted.error).toMatchObject({ code: 'CPU_BUDGET_EXCEEDED' });
    await expectNothingLeaked('budget-secret');
  });

  it('leaks nothing after a wall-clock kill', async () => {
    const planted = await registry.execute('plant', { secret: 'wall-secret', end: 'loop' }, { policy: { timeout: '0.1s' } });
    expect(planted.error).toMatchObject({ code: 'TOOL_TIMEOUT' });
    await expectNothingLeaked('wall-secret');
  });
});

describe.runIf(hasCGuests)('a used instance reset to its snapshot', () => {
  // Its own registry (one worker): a component whose resets keep being refused stops being snapshotted.
  let resetting: ToolRegistry;
  let pristine: Probe;

  beforeAll(async () => {
    resetting = makeRegistry();
    await resetting.registerWasmTools(fixture('smuggler'));
    pristine = (await probe(resetting, { print: false })).probe;
  });
  afterAll(async () => {
    await resetting.close();
  });

  /**
   * Probe without printing (so the probe itself changes nothing the tests
   * look at); where each probe's instance came from. Four times: whether
   * the reset is done before the next call reaches the worker depends on
   * timing (a call that comes first gets a new instance), so the tests ask
   * that a reset served some of them, and that none saw anything.
   */
  const expectNothingLeakedQuietly = async (on: ToolRegistry, secret: string): Promise<InstanceSource[]> => {
    const sources: InstanceSource[] = [];
    // Until one probe is served by a reset instance (bounded; a busy machine can make the reset late).
    for (let i = 0; i < 20 && (i < 4 || !sources.includes('restored')); i += 1) {
      if (i >= 4) await new Promise((resolve) => setTimeout(resolve, 50));
      const { probe: seen, events, instance } = await probe(on, { print: false });
      expect(seen).toEqual(pristine);
      expect(JSON.stringify(events)).not.toContain(secret);
      sources.push(instance);
    }
    return sources;
  };

  it('resets an instance whose call left memory its size and made no resource, and the reset leaks nothing', async () => {
    await expectNothingLeakedQuietly(resetting, 'warm-up');
    const planted = await resetting.execute('plant', { secret: 'reset-secret', grow: false, print: false });
    expect(planted.isError).toBe(false);
    // The probe runs on the very instance the plant used, reset: static data, heap, environment and call count are back.
    expect(await expectNothingLeakedQuietly(resetting, 'reset-secret')).toContain('restored');
  });

  it('resets an instance after a cooperative cancel, and the reset leaks nothing', async () => {
    const stream = resetting.stream('plant', { secret: 'reset-cancel-secret', end: 'spin', grow: false, print: false }, { callId: 'smuggle-reset-cancel' });
    const cancel = setTimeout(() => stream.cancel(), 100);
    const events = await collect(stream);
    clearTimeout(cancel);
    expect(events.at(-1)?.type).toBe('result');
    expect(await expectNothingLeakedQuietly(resetting, 'reset-cancel-secret')).toContain('restored');
  });

  it('replaces, not resets, an instance whose call grew memory', async () => {
    const planted = await resetting.execute('plant', { secret: 'grown-secret', print: false });
    expect(planted.isError).toBe(false);
    const [first] = await expectNothingLeakedQuietly(resetting, 'grown-secret');
    expect(first).not.toBe('restored');
  });

  it('resets an instance whose call left a half-written stdout line in libc\'s buffer, and the line is gone', async () => {
    const planted = await resetting.execute('plant', { secret: 'buffered-secret', grow: false });
    expect(planted.isError).toBe(false);
    expect(await expectNothingLeakedQuietly(resetting, 'buffered-secret')).toContain('restored');
    // A probe that prints flushes stdout: nothing of the plant's line comes out with it.
    const { events } = await probe(resetting);
    expect(JSON.stringify(events)).not.toContain('buffered-secret');
  });

  it('resets an instance whose call wrote to stdout: the stdout handle its write made is dropped with the reset, and stdout still works', async () => {
    const printed = await probe(resetting);
    expect(JSON.stringify(printed.events)).toContain('probe');
    expect(await expectNothingLeakedQuietly(resetting, 'no-secret')).toContain('restored');
    // The restored instance asks for stdout again on its first write, and its lines come out.
    for (let i = 0; i < 3; i += 1) {
      const again = await probe(resetting);
      expect(again.probe).toEqual(pristine);
      expect(again.events.filter((event) => event.type === 'log' && event.message === 'probe')).toHaveLength(1);
    }
  });

  it('replaces, not resets, an instance whose call kept a handle to a host object that is not stdout or stderr (stdin)', async () => {
    const planted = await resetting.execute('plant', { secret: 'stdin-secret', grow: false, print: false, stdin: true });
    expect(planted.isError).toBe(false);
    const [first] = await expectNothingLeakedQuietly(resetting, 'stdin-secret');
    expect(first).not.toBe('restored');
  });
});

interface JsProbe {
  module: string | null;
  global: string | null;
  closure: string | null;
  proto: string | null;
  map: string | null;
  bulk: string | null;
  calls: number;
}

// componentize-js (fixtures/guests/js/js_smuggler): its engine, heap and module state live in linear memory.
describe('a JS guest in the default isolation', () => {
  let registry: ToolRegistry;
  let reused: ToolRegistry;
  const nothing: JsProbe = { module: null, global: null, closure: null, proto: null, map: null, bulk: null, calls: 1 };

  const jsProbe = async (on: ToolRegistry): Promise<{ seen: JsProbe; instance: InstanceSource }> => {
    const result = await on.execute('probe', {});
    if (result.isError) throw new Error(`probe failed: ${JSON.stringify(result.error)}`);
    return { seen: result.structuredContent as JsProbe, instance: result.accounting?.instance };
  };

  beforeAll(async () => {
    registry = makeRegistry();
    await registry.registerWasmTools(fixture('js_smuggler'));
    reused = makeRegistry();
    await reused.registerWasmTools(fixture('js_smuggler'), { isolation: 'worker' });
  });
  afterAll(async () => {
    await registry.close();
    await reused.close();
  });

  it('shows a reused instance keeping every JS channel, so the probe can see a leak', async () => {
    expect((await reused.execute('plant', { secret: 'js-reused' })).isError).toBe(false);
    const { seen } = await jsProbe(reused);
    expect(seen).toMatchObject({ module: 'js-reused', global: 'js-reused', closure: 'js-reused', proto: 'js-reused', map: 'js-reused', calls: 2 });
    expect(seen.bulk).toBe('js-reused'.repeat(4).slice(0, 32));
  });

  it('resets the instance after a plant in module state, globalThis, a closure, a prototype, a Map and the heap, and the reset leaks nothing', async () => {
    expect((await jsProbe(registry)).seen).toEqual(nothing);
    expect((await registry.execute('plant', { secret: 'js-secret' })).isError).toBe(false);
    // Probes until one is served by a reset instance (bounded): a call that reaches the worker before the
    // reset is done gets a new instance (see above), and on a busy machine the reset may take a while.
    const sources: InstanceSource[] = [];
    for (let i = 0; i < 20 && !sources.includes('restored'); i += 1) {
      if (i >= 4) await new Promise((resolve) => setTimeout(resolve, 50));
      const { seen, instance } = await jsProbe(registry);
      expect(seen).toEqual(nothing);
      sources.push(instance);
    }
    expect(sources).toContain('restored');
  });

  it('leaks nothing after a plant that ends in a trap (the trapped instance is replaced)', async () => {
    const planted = await registry.execute('plant', { secret: 'js-trap-secret', end: 'throw' });
    expect(planted.error).toMatchObject({ code: 'TOOL_CRASHED' });
    for (let i = 0; i < 2; i += 1) expect((await jsProbe(registry)).seen).toEqual(nothing);
  });
});
