/**
 * Property-based fuzzing of the host's edges (fast-check): mutated and
 * truncated components, arbitrary JSON arguments, arbitrary policies, mutated
 * MCP JSON-RPC bodies, and arbitrary bytes as gRPC ToolCall frames. The
 * property is always the same: every case ends in a result or a structured
 * error (a known code, never INTERNAL), exactly once, and the host keeps
 * serving honest calls afterwards. `npm run test:fuzz` (also run by `.ci/run`);
 * FUZZ_RUNS scales the number of cases.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_CODES, ToolhostError, defineNativeTool, type ToolEvent, type ToolRegistry } from '../../host/index.js';
import { startGrpcServer, type GrpcServerHandle } from '../../host/servers/grpc/server.js';
import { startMcpHttpServer, type McpHttpServer } from '../../host/servers/mcp-http.js';
import { collect, example, freshCacheDir, hasCGuests, makeRegistry } from '../helpers.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 1);
const runs = (n: number): number => Math.max(1, Math.round(n * RUNS));
const KNOWN_CODES = new Set(Object.keys(ERROR_CODES));

/** Exactly one terminal event, last, with a known code that is not INTERNAL. */
function expectOneTerminal(events: ToolEvent[]): void {
  const terminals = events.filter((event) => event.type === 'result' || event.type === 'error');
  expect(terminals).toHaveLength(1);
  expect(events.at(-1)).toBe(terminals[0]);
  const terminal = terminals[0]!;
  if (terminal.type === 'error') {
    expect(KNOWN_CODES.has(terminal.code), terminal.code).toBe(true);
    expect(terminal.code, terminal.message).not.toBe('INTERNAL');
  }
}

describe.runIf(hasCGuests)('fuzzing the host', () => {
  let registry: ToolRegistry;
  let ctools: Uint8Array;
  const scratch = mkdtempSync(join(tmpdir(), 'toolhost-fuzz-'));

  beforeAll(async () => {
    ctools = new Uint8Array(await readFile(example('ctools')));
    registry = makeRegistry({ sandbox: { threads: 1, describeTimeoutMs: 3000 } });
    await registry.registerWasmTools(example('ctools'));
    registry.register(defineNativeTool({ name: 'native_echo', description: 'Echoes.', inputSchema: { type: 'object' }, run: (args) => args }));
  });
  afterAll(async () => {
    await registry?.close();
  });

  const honest = async (): Promise<void> => {
    expect((await registry.execute('sha256', { text: 'abc' })).structuredContent).toEqual({ sha256: 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad' });
  };

  it('mutated and truncated components load or are refused with a code, and the pool goes on', async () => {
    const mutation = fc.oneof(
      fc.record({ kind: fc.constant('truncate' as const), at: fc.nat({ max: ctools.length - 1 }) }),
      fc.record({ kind: fc.constant('flip' as const), at: fc.array(fc.nat({ max: ctools.length - 1 }), { minLength: 1, maxLength: 8 }), value: fc.integer({ min: 0, max: 255 }) }),
      fc.record({ kind: fc.constant('garbage' as const), bytes: fc.uint8Array({ maxLength: 256 }) }),
    );
    let n = 0;
    await fc.assert(fc.asyncProperty(mutation, async (change) => {
      let bytes: Uint8Array;
      if (change.kind === 'truncate') bytes = ctools.slice(0, change.at);
      else if (change.kind === 'garbage') bytes = change.bytes;
      else {
        bytes = ctools.slice();
        for (const at of change.at) bytes[at] = change.value;
      }
      const file = join(scratch, `mutant-${n++}.wasm`);
      writeFileSync(file, bytes);
      const own = makeRegistry({ sandbox: { threads: 1, cacheDir: freshCacheDir(), describeTimeoutMs: 3000 } });
      try {
        await own.registerWasmTools(file);
      } catch (error) {
        expect(error).toBeInstanceOf(ToolhostError);
        expect(KNOWN_CODES.has((error as ToolhostError).code)).toBe(true);
        expect((error as ToolhostError).code).not.toBe('INTERNAL');
      } finally {
        await own.close();
      }
    }), { numRuns: runs(25) });
    await honest();
  });

  it('arbitrary JSON arguments end in a result or one structured error', async () => {
    await fc.assert(fc.asyncProperty(fc.constantFrom('sha256', 'echo', 'native_echo'), fc.jsonValue({ maxDepth: 6 }), async (tool, args) => {
      expectOneTerminal(await collect(registry.stream(tool, args)));
    }), { numRuns: runs(150) });
    await honest();
  });

  it('arbitrary policies end in a result or one structured error', async () => {
    const field = fc.oneof(
      fc.constantFrom('timeout', 'max_retries', 'backoff', 'worktree_required', 'network_policy', 'privilege_level', 'budget_cpu_ms', 'budget_wall_ms', 'memory_mb', '__proto__', 'constructor'),
      fc.string({ maxLength: 12 }),
    );
    const value = fc.oneof(fc.jsonValue({ maxDepth: 2 }), fc.constantFrom('DENY_ALL', 'FULL_ACCESS', 'PRIVILEGED', '0.5s', '-1s', 'NaN'), fc.integer(), fc.double());
    await fc.assert(fc.asyncProperty(fc.dictionary(field, value, { maxKeys: 4 }), async (policy) => {
      expectOneTerminal(await collect(registry.stream('echo', { x: 1 }, { policy: policy as Record<string, unknown> })));
    }), { numRuns: runs(200) });
    await honest();
  });

  describe('servers', () => {
    let mcp: McpHttpServer;
    let grpcServer: GrpcServerHandle;
    let client: grpc.Client;

    beforeAll(async () => {
      mcp = await startMcpHttpServer(registry, { port: 0 });
      grpcServer = await startGrpcServer(registry, { host: '127.0.0.1', port: 0 });
      client = new grpc.Client(grpcServer.address, grpc.credentials.createInsecure());
    });
    afterAll(async () => {
      client?.close();
      await Promise.allSettled([mcp?.close(), grpcServer?.close()]);
    });

    const post = async (body: string, session?: string): Promise<Response> => fetch(mcp.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...(session ? { 'mcp-session-id': session } : {}) },
      body,
      signal: AbortSignal.timeout(10_000),
    });
    const initialize = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'fuzz', version: '0' } } });

    it('mutated MCP JSON-RPC bodies get an HTTP answer, never a server error, and the server keeps serving', async () => {
      const opened = await post(initialize);
      expect(opened.status).toBe(200);
      const session = opened.headers.get('mcp-session-id') ?? undefined;
      await opened.text();
      const message = fc.oneof(
        fc.record({
          jsonrpc: fc.oneof(fc.constant('2.0'), fc.jsonValue()),
          id: fc.oneof(fc.integer(), fc.string(), fc.constant(null), fc.jsonValue()),
          method: fc.oneof(fc.constantFrom('tools/list', 'tools/call', 'initialize', 'ping', 'notifications/cancelled', 'resources/list'), fc.string()),
          params: fc.oneof(fc.record({ name: fc.constantFrom('sha256', 'echo', 'nope'), arguments: fc.jsonValue({ maxDepth: 4 }) }), fc.jsonValue({ maxDepth: 4 })),
        }, { requiredKeys: [] }).map((value) => JSON.stringify(value)),
        fc.jsonValue({ maxDepth: 4 }).map((value) => JSON.stringify(value)),
        fc.string({ maxLength: 200 }),
      );
      await fc.assert(fc.asyncProperty(message, fc.boolean(), async (body, withSession) => {
        const response = await post(body, withSession ? session : undefined);
        await response.text();
        expect(response.status, body).toBeLessThan(500);
      }), { numRuns: runs(150) });
      const again = await post(initialize);
      expect(again.status).toBe(200);
      await again.text();
    });

    it('arbitrary bytes as a gRPC ToolCall end in a frame or a status, and the server keeps serving', async () => {
      const call = (bytes: Uint8Array): Promise<{ ok: boolean; code?: number }> => new Promise((resolve) => {
        client.makeUnaryRequest('/sw4rm.tool.ToolService/Call', (value: Buffer) => value, (value: Buffer) => value, Buffer.from(bytes), { deadline: Date.now() + 10_000 }, (error) => {
          resolve(error ? { ok: false, code: error.code } : { ok: true });
        });
      });
      await fc.assert(fc.asyncProperty(fc.uint8Array({ maxLength: 512 }), async (bytes) => {
        const outcome = await call(bytes);
        // A status the server chose: never a deadline (a hang) nor an internal error.
        if (!outcome.ok) expect([grpc.status.DEADLINE_EXCEEDED, grpc.status.INTERNAL, grpc.status.UNKNOWN]).not.toContain(outcome.code);
      }), { numRuns: runs(150) });
      await honest();
    });
  });
});
