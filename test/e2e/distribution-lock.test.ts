/**
 * toolhost.lock against a real registry (docker-registry on loopback):
 * `toolhost pull` fetches, verifies and stores the config's remote tools and
 * pins them (manifest digest, layer digest, size, the signer's fingerprint);
 * pulling again changes nothing; a tag that moved changes nothing for `list`
 * until `toolhost update`; with the lock, a host starts with the registry gone.
 */
import { createHash, generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { example } from '../helpers.js';
import { runCli } from '../cli-runner.js';
import { OciRegistry, Pusher, digestOf, hasRegistry } from '../oci-registry.js';

const ctools = new Uint8Array(readFileSync(example('ctools')));
const text = new Uint8Array(readFileSync(example('text')));

interface LockEntry { pinned: string; manifestDigest: string; layerDigest: string; size: number; signer: string }
interface PullReport { lock: string; changed: string[]; components: Record<string, LockEntry> }

describe.skipIf(!hasRegistry)('toolhost.lock', () => {
  const registry = new OciRegistry();
  const project = mkdtempSync(join(tmpdir(), 'toolhost-lock-'));
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const fingerprint = `sha256:${createHash('sha256').update(publicKey.export({ type: 'spki', format: 'der' })).digest('hex')}`;
  let source = '';
  let push: Pusher;
  const cli = (args: string[]) => runCli(args, 90_000, { cwd: project, env: { TOOLHOST_LOG: 'error' } });
  const listed = async (): Promise<string[]> => {
    const run = await cli(['list', '--json']);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    return (JSON.parse(run.stdout) as Array<{ name: string }>).map((tool) => tool.name);
  };
  const readLock = (): { version: number; components: Record<string, LockEntry> } => JSON.parse(readFileSync(join(project, 'toolhost.lock'), 'utf8')) as never;

  beforeAll(async () => {
    await registry.start();
    push = new Pusher(registry.host, 'tools/locked');
    source = `oci://${registry.host}/tools/locked:v1`;
    writeFileSync(join(project, 'trusted.pub'), publicKey.export({ type: 'spki', format: 'pem' }));
    writeFileSync(join(project, 'toolhost.yaml'), `tools:\n  - path: ${source}\ndistribution:\n  store_dir: ./store\n  verify:\n    keys: [trusted.pub]\n`);
  }, 30_000);
  afterAll(() => registry.close());

  it('pulls, pins, survives a moved tag until update, and starts offline from the lock', async () => {
    const first = await push.component('v1', ctools);
    await push.cosignSign(first, privateKey);

    // pull: fetched, verified, stored, pinned.
    const pulled = await cli(['pull']);
    expect(pulled.stderr).toBe('');
    expect(pulled.code).toBe(0);
    expect((JSON.parse(pulled.stdout) as PullReport).changed).toEqual([source]);
    const lock = readLock();
    expect(lock).toEqual({
      version: 1,
      components: { [source]: { pinned: `oci://${registry.host}/tools/locked@${first}`, manifestDigest: first, layerDigest: digestOf(ctools), size: ctools.byteLength, signer: fingerprint } },
    });

    // Round trip: pulling again reads the lock and writes the same bytes.
    const before = readFileSync(join(project, 'toolhost.lock'), 'utf8');
    const again = await cli(['pull']);
    expect(again.code).toBe(0);
    expect((JSON.parse(again.stdout) as PullReport).changed).toEqual([]);
    expect(readFileSync(join(project, 'toolhost.lock'), 'utf8')).toBe(before);
    expect(await listed()).toContain('echo');

    // The tag moves to another (signed) component: the lock still runs the first one.
    const moved = await push.component('v1', text);
    await push.cosignSign(moved, privateKey);
    const withLock = await listed();
    expect(withLock).toContain('echo');
    expect(readFileSync(join(project, 'toolhost.lock'), 'utf8')).toBe(before);

    // update: the tag is resolved again and the lock says so; list now runs the new component.
    const updated = await cli(['update']);
    expect(updated.code).toBe(0);
    expect((JSON.parse(updated.stdout) as PullReport).changed).toEqual([source]);
    expect(readLock().components[source]).toMatchObject({ manifestDigest: moved, layerDigest: digestOf(text), size: text.byteLength, signer: fingerprint });
    const afterUpdate = await listed();
    expect(afterUpdate).not.toContain('echo');
    expect(afterUpdate.length).toBeGreaterThan(0);

    // Offline: the registry is gone; the locked tag loads from the store, not resolved.
    await registry.stop();
    expect(await listed()).toEqual(afterUpdate);
  }, 240_000);

  it('refuses a lock that is not one, naming the file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'toolhost-lock-bad-'));
    writeFileSync(join(dir, 'toolhost.yaml'), 'tools: []\n');
    writeFileSync(join(dir, 'toolhost.lock'), '{"version":1,"components":{"oci://x/y:z":{"pinned":"oci://x/y@sha256:00"}}}');
    const run = await runCli(['list', '--json'], 60_000, { cwd: dir });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/toolhost\.lock: the entry for oci:\/\/x\/y:z is malformed/);
  }, 90_000);
});
