/**
 * Issue 36 M3 (process containment, serve's default): a guest's huge client request blocked the sandbox process's
 * main thread (it was structured-cloned there, then over IPC); the heartbeat went unanswered, the process was
 * killed, and another principal's call in flight ended TOOL_CRASHED. Now the request is refused or capped in the
 * worker (the process's main thread relays bounded bytes only), and the heartbeat is answered by a thread of the
 * process's own on a pipe of its own, saying how long the main loop has not turned: a process is killed only when
 * it is truly stuck. The control: an honest sampling call in process containment reaches the client and back.
 */
import { fork } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import type { Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolRegistry } from '../host/index.js';
import { Heartbeat } from '../host/sandbox/process/heartbeat.js';
import { fixture, hasCGuests, makeRegistry, root } from './helpers.js';

const HEARTBEAT_MS = 1_000;
type Answer = { error?: { code: string; message: string }; model?: string; replies?: string[] };
const client = { sample: async () => ({ role: 'assistant' as const, content: { type: 'text' as const, text: 'four' }, model: 'test-model' }) };

describe.runIf(hasCGuests)('a huge client request in process containment', () => {
  let registry: ToolRegistry;
  const limitHits: string[] = [];

  beforeAll(async () => {
    registry = makeRegistry({ sandbox: { containment: 'process', heartbeatMs: HEARTBEAT_MS, threads: 2 }, defaults: { wallMs: 60_000 } });
    registry.onLimitHit((_tool, limit) => limitHits.push(limit));
    await registry.registerWasmTools(fixture('hostile'));
    // Sampling granted (its huge request is capped), elicitation not (its huge request is refused unread).
    await registry.registerWasmTools(fixture('client_flood'), { grant: { sampling: { maxRequests: 5, maxTokens: 1000 } } });
    await registry.registerWasmTools(fixture('mcp_rich'), { grant: { sampling: { maxRequests: 1, maxTokens: 100 } } });
  }, 60_000);
  afterAll(async () => {
    await registry?.close();
  });

  it('ends only the hostile call, with a clear error, while another principal\'s call runs on', { timeout: 90_000 }, async () => {
    expect((await registry.execute('honest', { n: 1 })).structuredContent).toMatchObject({ sum: 1 });
    const { pid, restarts } = registry.sandboxStats()!.process!;
    const histogram = monitorEventLoopDelay({ resolution: 10 });
    histogram.enable();
    const other = registry.execute('sleep_for', { ms: 4_000 }, { principal: 'bob' });
    const hostile = await registry.execute('huge_sample', { messages: 1_000_000 }, { principal: 'mallory', client });
    const hostileElicit = await registry.execute('huge_elicit', { bytes: 50_000_000 }, { principal: 'mallory', client });
    const answered = await other;
    histogram.disable();
    expect((hostile.structuredContent as Answer).error).toMatchObject({ code: 'OUTPUT_LIMIT_EXCEEDED' });
    expect((hostile.structuredContent as Answer).error!.message).toContain('client_request_bytes');
    expect((hostileElicit.structuredContent as Answer).error).toMatchObject({ code: 'PERMISSION_DENIED' });
    expect((hostileElicit.structuredContent as Answer).error!.message).toContain('grant.elicitation');
    expect(answered.error).toBeUndefined();
    expect(answered.structuredContent).toMatchObject({ slept_ms: 4_000 });
    expect(registry.sandboxStats()!.process).toMatchObject({ pid, restarts });
    expect(limitHits).not.toContain('heartbeat_ms');
    expect(histogram.max / 1e6).toBeLessThan(1_000);
  });

  it('sends an honest sampling request to the client and its answer back to the guest (control)', async () => {
    const result = await registry.execute('ask_model', { max_tokens: 50 }, { client });
    expect(result.structuredContent).toEqual({ replies: ['four'], model: 'test-model' });
  });
});

describe('the sandbox process\'s heartbeat thread', () => {
  it('answers pings while the process\'s main thread is blocked, and says for how long', { timeout: 30_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'heartbeat-thread-'));
    const script = join(dir, 'child.mjs');
    const module = pathToFileURL(join(root, 'dist', 'host', 'sandbox', 'process', 'heartbeat-thread.js')).href;
    // Starts the thread, then blocks its main thread for 1.5 s once the parent says so.
    writeFileSync(script, `import { startHeartbeatThread } from ${JSON.stringify(module)};
startHeartbeatThread();
process.on('message', () => { const until = Date.now() + 1500; while (Date.now() < until); process.send('done'); });
process.send('ready');
`);
    const child = fork(script, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc', 'pipe'] });
    try {
      const pipe = child.stdio[4] as Socket;
      // Killed at the end: a read then may fail with ECONNRESET (once an uncaught error that failed the run).
      pipe.on('error', () => {});
      const answers: number[] = [];
      pipe.on('data', (chunk: Buffer) => {
        for (let at = 0; at + 4 <= chunk.length; at += 4) answers.push(chunk.readUInt32LE(at));
      });
      await new Promise((resolve) => child.once('message', resolve));
      const pinger = setInterval(() => pipe.write(Buffer.from([1])), 100);
      // The thread is up once it answers (a loaded machine may take a while to start it).
      while (answers.length === 0) await new Promise((resolve) => setTimeout(resolve, 20));
      const before = answers.length;
      child.send('block');
      await new Promise((resolve) => child.once('message', resolve));
      clearInterval(pinger);
      // Answered throughout the block, the stall growing past a second.
      expect(answers.length - before).toBeGreaterThan(3);
      expect(Math.max(...answers)).toBeGreaterThan(1_000);
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('kills a process whose thread answers but whose main loop has not turned for the timeout, and not one briefly busy', { timeout: 30_000 }, async () => {
    const silent: number[] = [];
    const heartbeat = new Heartbeat(1_000, () => {}, (ms) => silent.push(ms));
    const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    try {
      heartbeat.answered(0);
      await sleep(400);
      heartbeat.answered(300);
      await sleep(400);
      heartbeat.answered(200);
      expect(silent).toHaveLength(0);
      // From now on every answer comes on time but says the loop last turned 5 s ago: stuck, whatever the thread says.
      for (let i = 0; i < 40 && silent.length === 0; i++) {
        await sleep(100);
        heartbeat.answered(5_000);
      }
    } finally {
      heartbeat.stop();
    }
    expect(silent).toHaveLength(1);
  });
});
