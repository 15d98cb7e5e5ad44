/**
 * A guest's stdout and stderr are captured as `log` events and never reach
 * the host process's own stdout or stderr: through the library (with the
 * host's process.stdout/stderr spied on). Through the CLI (a black box, in
 * processes of its own): test/e2e/stdio-capture-cli.test.ts.
 */
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { ToolRegistry } from '../host/index.js';
import { DEFAULT_GUEST_OUTPUT_LIMITS } from '../host/sandbox/protocol.js';
import { collect, fixture, makeRegistry, terminalCount } from './helpers.js';
import { DROPPED, expectedPrintLines, expectNoGuestOutput, stdioLogs } from './stdio-expect.js';

const noisy = fixture('noisy');

/**
 * Run `fn` with the host's process.stdout.write and process.stderr.write
 * spied on; returns what was written to them meanwhile (worker threads' own
 * stdio is piped through these too). Waits a little after `fn` so output a
 * worker wrote late still arrives before the spies are removed.
 */
async function withHostStdioSpied<T>(fn: () => Promise<T>): Promise<{ value: T; written: string }> {
  const chunks: string[] = [];
  const record = (chunk: unknown): void => {
    chunks.push(typeof chunk === 'string' ? chunk : Buffer.isBuffer(chunk) || chunk instanceof Uint8Array ? Buffer.from(chunk).toString('utf8') : String(chunk));
  };
  const realOut = process.stdout.write.bind(process.stdout);
  const realErr = process.stderr.write.bind(process.stderr);
  const out = vi.spyOn(process.stdout, 'write').mockImplementation(((chunk: unknown, ...rest: unknown[]) => {
    record(chunk);
    return (realOut as (...args: unknown[]) => boolean)(chunk, ...rest);
  }) as typeof process.stdout.write);
  const err = vi.spyOn(process.stderr, 'write').mockImplementation(((chunk: unknown, ...rest: unknown[]) => {
    record(chunk);
    return (realErr as (...args: unknown[]) => boolean)(chunk, ...rest);
  }) as typeof process.stderr.write);
  try {
    const value = await fn();
    await new Promise((resolve) => setTimeout(resolve, 250));
    return { value, written: chunks.join('') };
  } finally {
    out.mockRestore();
    err.mockRestore();
  }
}

/** The library tests' registry, with the noisy fixture loaded. */
let registry: ToolRegistry;

beforeAll(async () => {
  if (!existsSync(noisy)) throw new Error(`the noisy fixture is not built: ${noisy}`);
  registry = makeRegistry();
  await registry.registerWasmTools(noisy);
});

afterAll(async () => {
  await registry?.close();
});

describe('guest stdio through the library', () => {
  it('writes nothing from the guest to the host\'s stdout or stderr', async () => {
    const { value: events, written } = await withHostStdioSpied(() => collect(registry.stream('print', { lines: 50 })));
    expectNoGuestOutput(written);
    expect(terminalCount(events)).toBe(1);
    expect(events.at(-1)).toMatchObject({ type: 'result', data: { printed: 50 } });
    expect(stdioLogs(events).map(({ source, message }) => ({ source, message }))).toEqual(expectedPrintLines(50));
  });

  it('caps a flood of guest output, says so, and still ends the call with one result', async () => {
    // 5,000 lines to each stream is ~3.5 times the default 64 KiB cap.
    const lines = 5_000;
    // The guest keeps printing (into the void) after the cap: give it more than the default 30 s on a busy machine.
    const policy = { timeout: '150s' };
    const { value: events, written } = await withHostStdioSpied(() => collect(registry.stream('print', { lines }, { policy })));
    expectNoGuestOutput(written);

    expect(events[0]?.type).toBe('start');
    expect(terminalCount(events)).toBe(1);
    expect(events.at(-1)).toMatchObject({ type: 'result', data: { printed: lines } });

    const logs = stdioLogs(events);
    const dropped = logs.filter((log) => log.message.includes(DROPPED));
    expect(dropped).toHaveLength(1);
    expect(dropped[0]?.level).toBe('warn');
    expect(logs.at(-1)).toBe(dropped[0]);

    // What was kept fits the per-call budget (each line costs its bytes plus a newline)
    // and is the beginning of what the guest wrote, in order.
    const kept = logs.slice(0, -1);
    const keptBytes = kept.reduce((sum, log) => sum + Buffer.byteLength(log.message) + 1, 0);
    expect(keptBytes).toBeLessThanOrEqual(DEFAULT_GUEST_OUTPUT_LIMITS.stdioBytes);
    // The shortest line, "noisy stdout line 0\n", is 20 bytes: that bounds the number of events.
    expect(kept.length).toBeLessThanOrEqual(Math.ceil(DEFAULT_GUEST_OUTPUT_LIMITS.stdioBytes / 20));
    expect(kept.length).toBeGreaterThan(0);
    expect(kept.map(({ source, message }) => ({ source, message }))).toEqual(expectedPrintLines(lines).slice(0, kept.length));
    expect(events.length).toBeLessThan(kept.length + 10);
  }, 180_000);

  it('applies a configured stdio limit', async () => {
    const small = makeRegistry({ sandbox: { outputLimits: { stdioBytes: 1024 }, threads: 1 } });
    try {
      await small.registerWasmTools(noisy);
      const events = await collect(small.stream('print', { lines: 200 }));
      expect(terminalCount(events)).toBe(1);
      expect(events.at(-1)).toMatchObject({ type: 'result', data: { printed: 200 } });
      const logs = stdioLogs(events);
      expect(logs.filter((log) => log.message.includes(DROPPED))).toHaveLength(1);
      const kept = logs.filter((log) => !log.message.includes(DROPPED));
      const keptBytes = kept.reduce((sum, log) => sum + Buffer.byteLength(log.message) + 1, 0);
      expect(keptBytes).toBeLessThanOrEqual(1024);
      // 1024 bytes hold about 50 of these lines; all of them are kept before the cut.
      expect(keptBytes).toBeGreaterThan(1024 - 30);
      expect(kept.map(({ source, message }) => ({ source, message }))).toEqual(expectedPrintLines(200).slice(0, kept.length));
    } finally {
      await small.close();
    }
  });
});

describe('a guest that tries to exit the process', () => {
  it('ends with TOOL_CRASHED, and the next calls of the tool and its component run', async () => {
    const { value: first, written } = await withHostStdioSpied(() => collect(registry.stream('exit', { code: 3 })));
    expectNoGuestOutput(written);
    expect(first[0]?.type).toBe('start');
    expect(terminalCount(first)).toBe(1);
    expect(first.at(-1)).toMatchObject({ type: 'error', code: 'TOOL_CRASHED', stage: 'run' });
    // The guest said what it tried on stderr before it trapped.
    expect(stdioLogs(first).some((log) => log.source === 'stderr' && log.message.startsWith('noisy exit(3): still running'))).toBe(true);

    // The same tool runs again on a healthy instance: it reaches the guest and crashes the same way.
    const second = await collect(registry.stream('exit', { code: 4 }));
    expect(terminalCount(second)).toBe(1);
    expect(second.at(-1)).toMatchObject({ type: 'error', code: 'TOOL_CRASHED', stage: 'run' });
    expect(stdioLogs(second).some((log) => log.message.startsWith('noisy exit(4): still running'))).toBe(true);

    // And the component's other tools still work.
    const print = await collect(registry.stream('print', { lines: 2 }));
    expect(print.at(-1)).toMatchObject({ type: 'result', data: { printed: 2 } });
    expect(stdioLogs(print).map(({ source, message }) => ({ source, message }))).toEqual(expectedPrintLines(2));
    const counter = await collect(registry.stream('global_counter', {}));
    expect(counter.at(-1)).toMatchObject({ type: 'result', data: { count: expect.any(Number) } });
  });
});
