/**
 * A component from a URL pinned by its digest (`http://127.0.0.1:PORT/x.wasm#sha256=HEX`,
 * plain http on loopback): the right digest loads and is kept; a wrong one is refused with
 * nothing stored; a URL without a digest is refused before any request.
 */
import { readFileSync, mkdtempSync, existsSync, readdirSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ToolhostError } from '../host/index.js';
import { example, makeRegistry } from './helpers.js';
import { digestOf } from './oci-registry.js';

const wasm = readFileSync(example('ctools'));
let requests = 0;
const server = createServer((_request, response) => {
  requests += 1;
  response.writeHead(200, { 'content-type': 'application/wasm' }).end(wasm);
});

async function load(source: string, storeDir: string): Promise<string[] | ToolhostError> {
  const registry = makeRegistry({ distribution: { storeDir } });
  try {
    return (await registry.registerWasmTools(source)).components.flatMap((component) => component.tools);
  } catch (error) {
    if (error instanceof ToolhostError) return error;
    throw error;
  } finally {
    await registry.close();
  }
}

const blobs = (storeDir: string): string[] => (existsSync(join(storeDir, 'blobs', 'sha256')) ? readdirSync(join(storeDir, 'blobs', 'sha256')) : []);

describe('components from a URL pinned by digest', () => {
  let base = '';
  beforeAll(() => new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => {
    base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    resolve();
  })));
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('loads the bytes whose sha256 the URL names, and keeps them for the next load without a request', async () => {
    const storeDir = mkdtempSync(join(tmpdir(), 'toolhost-url-'));
    const source = `${base}/ctools.wasm#sha256=${digestOf(wasm).slice(7)}`;
    expect(await load(source, storeDir)).toContain('echo');
    const before = requests;
    expect(await load(source, storeDir)).toContain('echo');
    expect(requests).toBe(before);
  });

  it('refuses bytes that do not match the pinned digest, storing nothing', async () => {
    const storeDir = mkdtempSync(join(tmpdir(), 'toolhost-url-'));
    const error = await load(`${base}/ctools.wasm#sha256=${'0'.repeat(64)}`, storeDir);
    expect(error).toMatchObject({ code: 'SOURCE_INTEGRITY', details: { reason: 'digest-mismatch' } });
    expect(blobs(storeDir)).toEqual([]);
  });

  it('refuses a URL without a digest before any request', async () => {
    const before = requests;
    const error = await load(`${base}/ctools.wasm`, mkdtempSync(join(tmpdir(), 'toolhost-url-')));
    expect(error).toMatchObject({ code: 'INVALID_INPUT' });
    expect((error as ToolhostError).message).toMatch(/#sha256=/);
    expect(requests).toBe(before);
  });
});
