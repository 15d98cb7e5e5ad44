/**
 * Component ids remembered by file stat (host/sandbox/load/component-ids.ts): a
 * settled file's id is read back instead of hashed, and a file written since
 * (even to the same size and mtime) is hashed again, never given the
 * remembered id. The tests' clock runs 10 s ahead, so the files they just
 * wrote count as settled. And a first load that transpiles leaves the memo
 * knowing the new entry's files and (once settled) the component file.
 */
import { createHash, randomBytes } from 'node:crypto';
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { ComponentIds } from '../host/sandbox/load/component-ids.js';
import { fixture, hasCGuests, makeRegistry } from './helpers.js';

const scratch = mkdtempSync(join(tmpdir(), 'toolhost-component-ids-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const sha256 = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');
const ahead = (): number => Date.now() + 10_000;

function setUp(name: string): { file: string; cacheDir: string; memo: () => string[] } {
  const dir = mkdtempSync(join(scratch, `${name}-`));
  const cacheDir = join(dir, 'cache');
  return { file: join(dir, 'tool.wasm'), cacheDir, memo: () => (existsSync(join(cacheDir, 'ids-v1')) ? readdirSync(join(cacheDir, 'ids-v1')) : []) };
}

describe('component ids by stat', () => {
  it('reads a settled file\'s id back from the memo instead of hashing it', async () => {
    const { file, cacheDir, memo } = setUp('recall');
    const bytes = randomBytes(4096);
    writeFileSync(file, bytes);
    const ids = new ComponentIds(cacheDir, ahead);
    expect(await ids.known(file)).toBeUndefined();
    expect((await ids.read(file)).id).toBe(sha256(bytes));
    expect(memo()).toHaveLength(1);
    expect(await ids.known(file)).toBe(sha256(bytes));
    // What the memo says is what is answered (so a hit does not hash): plant another id to see it.
    const planted = 'a'.repeat(64);
    writeFileSync(join(cacheDir, 'ids-v1', memo()[0]!), planted);
    const read = await ids.read(file);
    expect(read.id).toBe(planted);
    expect(Buffer.from(read.bytes).equals(bytes)).toBe(true);
  });

  it('hashes a file written since, of the same size and with its old mtime put back', async () => {
    const { file, cacheDir } = setUp('rewrite');
    const first = randomBytes(4096);
    writeFileSync(file, first);
    const ids = new ComponentIds(cacheDir, ahead);
    expect((await ids.read(file)).id).toBe(sha256(first));
    const { atime, mtime } = statSync(file);
    // Past the file system's timestamp tick, so the rewrite's ctime differs (the real clock's settling does this).
    await sleep(50);
    const second = randomBytes(4096);
    writeFileSync(file, second);
    utimesSync(file, atime, mtime);
    expect(await ids.known(file)).toBeUndefined();
    expect((await ids.read(file)).id).toBe(sha256(second));
    expect(await ids.known(file)).toBe(sha256(second));
  });

  it('does not remember a file written within the last seconds (its timestamps could still repeat)', async () => {
    const { file, cacheDir, memo } = setUp('young');
    const bytes = randomBytes(1024);
    writeFileSync(file, bytes);
    const ids = new ComponentIds(cacheDir);
    expect((await ids.read(file)).id).toBe(sha256(bytes));
    expect(memo()).toEqual([]);
    expect(await ids.known(file)).toBeUndefined();
  });

  it('keeps working when the memo cannot be written', async () => {
    const { file, cacheDir } = setUp('read-only');
    const bytes = randomBytes(1024);
    writeFileSync(file, bytes);
    // The memo's directory is a file here: nothing can be remembered, and every read still answers.
    writeFileSync(cacheDir, 'not a directory');
    const ids = new ComponentIds(cacheDir, ahead);
    expect((await ids.read(file)).id).toBe(sha256(bytes));
    expect(await ids.hashOf(file)).toBe(sha256(bytes));
    expect(readFileSync(cacheDir, 'utf8')).toBe('not a directory');
  });
});

describe.runIf(hasCGuests)('the first load leaves the memo warm for the next start', () => {
  it('remembers the entry a transpile wrote at once, and the young component file once it settles', async () => {
    const { cacheDir } = setUp('first-load');
    // A component file written just now (as `toolhost build` or the scale bench leave it): too young to remember on read.
    const file = join(scratch, `flood-${randomBytes(4).toString('hex')}.wasm`);
    copyFileSync(fixture('flood'), file);
    const registry = makeRegistry({ sandbox: { cacheDir } });
    try {
      const report = await registry.registerWasmTools(file);
      expect(report.components[0]!.cache).toBe('miss');
    } finally {
      await registry.close();
    }
    // The next process's memo (the real clock: nothing here has settled) knows every file of the new entry.
    const entries = readdirSync(cacheDir).filter((name) => /^v\d+-/.test(name)).flatMap((format) => readdirSync(join(cacheDir, format)).map((id) => join(cacheDir, format, id)));
    expect(entries).toHaveLength(1);
    const meta = JSON.parse(readFileSync(join(entries[0]!, 'meta.json'), 'utf8')) as { sha256: Record<string, string> };
    expect(Object.keys(meta.sha256).length).toBeGreaterThanOrEqual(2);
    const next = new ComponentIds(cacheDir);
    for (const [name, id] of Object.entries(meta.sha256)) expect(await next.known(join(entries[0]!, name))).toBe(id);
    // The component file itself: remembered by the loader in the background once its ctime is SETTLED_NS old.
    const id = sha256(readFileSync(file));
    await vi.waitFor(async () => expect(await next.known(file)).toBe(id), { timeout: 8_000, interval: 100 });
  });
});
