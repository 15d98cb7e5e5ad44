/**
 * Every remote load has an overall deadline (`distribution.load_timeout_ms`) and takes its caller's signal. A server
 * that dribbles one byte every 200 ms keeps every per-read timeout satisfied for as long as it likes: with a 1.5 s
 * deadline the load fails with SOURCE_UNAVAILABLE (`deadline`, counted as a `load_timeout_ms` limit hit) soon after
 * the deadline, for a URL and for a registry's manifest alike, and the server's connection is closed. A caller's
 * abort (a fetch's signal; the admin load tool's call cancel) ends a load to a server that never answers at once,
 * with CANCELLED. Control: a prompt server's component loads under the same small deadline.
 */
import { readFileSync } from 'node:fs';
import { mkdtempSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../host/base/logger.js';
import { RemoteFetcher } from '../host/distribution/fetch.js';
import type { DistributionOptions } from '../host/distribution/options.js';
import { ToolhostError } from '../host/index.js';
import { registerAdminTools } from '../host/tools/admin-tools.js';
import { example, makeRegistry } from './helpers.js';
import { digestOf } from './oci-registry.js';

const wasm = new Uint8Array(readFileSync(example('ctools')));
const DEADLINE_MS = 1500;
const store = (): string => mkdtempSync(join(tmpdir(), 'toolhost-deadline-'));

/** Sends the headers at once, then one byte of `body` every 200 ms. */
function dribble(response: ServerResponse, body: Uint8Array, type: string): void {
  response.writeHead(200, { 'content-type': type, 'content-length': String(body.byteLength) });
  let offset = 0;
  const timer = setInterval(() => {
    if (offset >= body.byteLength || response.destroyed) {
      clearInterval(timer);
      return;
    }
    response.write(body.subarray(offset, offset + 1));
    offset += 1;
  }, 200);
  response.on('close', () => clearInterval(timer));
}

async function failure(run: () => Promise<unknown>): Promise<ToolhostError> {
  try {
    await run();
  } catch (error) {
    if (error instanceof ToolhostError) return error;
    throw error;
  }
  throw new Error('expected the load to fail');
}

describe('a remote load is bounded by its deadline and ends when its caller aborts', () => {
  let server: Server;
  let base = '';
  const closed: string[] = [];
  const manifest = Buffer.from(JSON.stringify({ schemaVersion: 2, mediaType: 'application/vnd.oci.image.manifest.v1+json', config: { mediaType: 'application/vnd.wasm.config.v0+json', digest: digestOf(Buffer.from('{}')), size: 2 }, layers: [{ mediaType: 'application/wasm', digest: digestOf(wasm), size: wasm.byteLength }] }));

  beforeAll(() => new Promise<void>((resolve) => {
    server = createServer((request: IncomingMessage, response: ServerResponse) => {
      request.on('close', () => closed.push(request.url ?? ''));
      const url = request.url ?? '';
      if (url === '/fast/ctools.wasm') response.writeHead(200, { 'content-type': 'application/wasm' }).end(wasm);
      else if (url === '/slow/ctools.wasm') dribble(response, wasm, 'application/wasm');
      else if (url.startsWith('/v2/acme/slow/manifests/')) dribble(response, manifest, 'application/vnd.oci.image.manifest.v1+json');
      else if (url.startsWith('/silent/')) { /* never answers */ } else response.writeHead(404).end();
    });
    server.listen(0, '127.0.0.1', () => {
      base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
      resolve();
    });
  }));
  afterAll(() => {
    server.closeAllConnections();
    server.close();
  });

  const pinned = (path: string): string => `${base}${path}#sha256=${digestOf(wasm).slice(7)}`;
  const options = (extra: Partial<DistributionOptions> = {}): DistributionOptions & { storeDir: string } => ({ storeDir: store(), loadTimeoutMs: DEADLINE_MS, ...extra });

  it('loads from a prompt server under the small deadline', async () => {
    const registry = makeRegistry({ distribution: options() });
    try {
      const report = await registry.registerWasmTools(pinned('/fast/ctools.wasm'));
      expect(report.components.flatMap((component) => component.tools)).toContain('echo');
    } finally {
      await registry.close();
    }
  }, 30_000);

  it('fails a URL that dribbles a byte every 200 ms soon after the deadline, counted as a limit hit', async () => {
    const registry = makeRegistry({ distribution: options() });
    const hits: string[] = [];
    registry.onLimitHit((_tool, limit) => hits.push(limit));
    const started = performance.now();
    try {
      const error = await failure(() => registry.registerWasmTools(pinned('/slow/ctools.wasm')));
      const elapsed = performance.now() - started;
      expect(error).toMatchObject({ code: 'SOURCE_UNAVAILABLE', details: { reason: 'deadline', limitHit: 'load_timeout_ms' } });
      expect(error.message).toMatch(/did not finish within 1500 ms \(distribution\.load_timeout_ms\)/);
      expect(elapsed).toBeGreaterThanOrEqual(DEADLINE_MS - 50);
      expect(elapsed).toBeLessThan(DEADLINE_MS + 5000);
      expect(hits).toContain('load_timeout_ms');
    } finally {
      await registry.close();
    }
    await expect.poll(() => closed.includes('/slow/ctools.wasm'), { timeout: 5000 }).toBe(true);
  }, 30_000);

  it('fails a registry whose manifest dribbles, the same way', async () => {
    const fetcher = new RemoteFetcher(options({ verify: { skip: true } }), silentLogger);
    const started = performance.now();
    const error = await failure(() => fetcher.fetch(`oci://${base.slice('http://'.length)}/acme/slow@${digestOf(manifest)}`, undefined));
    expect(error).toMatchObject({ code: 'SOURCE_UNAVAILABLE', details: { reason: 'deadline' } });
    expect(performance.now() - started).toBeLessThan(DEADLINE_MS + 5000);
  }, 30_000);

  it('ends a load to a server that never answers when its caller aborts, with CANCELLED', async () => {
    const fetcher = new RemoteFetcher(options({ loadTimeoutMs: 120_000 }), silentLogger);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 300);
    const started = performance.now();
    const error = await failure(() => fetcher.fetch(pinned('/silent/a.wasm'), undefined, controller.signal));
    expect(error).toMatchObject({ code: 'CANCELLED', details: { reason: 'aborted' } });
    expect(performance.now() - started).toBeLessThan(5000);
    await expect.poll(() => closed.includes('/silent/a.wasm'), { timeout: 5000 }).toBe(true);
  }, 30_000);

  it('ends the admin load tool\'s fetch when its call is cancelled', async () => {
    const registry = makeRegistry({ distribution: options({ loadTimeoutMs: 120_000, registries: [`${base}/silent/`] }) });
    registerAdminTools(registry, { callers: 'any' });
    const controller = new AbortController();
    try {
      setTimeout(() => controller.abort(), 300);
      const started = performance.now();
      const result = await registry.execute('toolhost_load', { path: pinned('/silent/b.wasm') }, { signal: controller.signal });
      expect(result.isError).toBe(true);
      expect(result.error?.code).toBe('CANCELLED');
      expect(performance.now() - started).toBeLessThan(5000);
      await expect.poll(() => closed.includes('/silent/b.wasm'), { timeout: 5000 }).toBe(true);
    } finally {
      await registry.close();
    }
  }, 30_000);
});
