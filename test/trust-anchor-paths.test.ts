/**
 * Trust anchors are host-owned paths (issue 35, T8): an ELEVATED tool whose
 * worktree held the repository's `cosign.pub` overwrote it, and the next
 * `toolhost pull` of an attacker-signed component verified, pinned and loaded
 * it. The publisher keys and `trusted_root` named in `distribution.verify` (and
 * a tool entry's own `verify`), the lock and the store join the paths no
 * writable worktree may hold: refused at config load at the line that names
 * them, and per call (PERMISSION_DENIED, reason host-owned-path). A worktree
 * elsewhere is fine, and a read-only one may still read the key.
 */
import { generateKeyPairSync } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openHost, type Host } from '../host/compose/host.js';
import { createRegistry } from '../host/compose/registry.js';
import { ConfigError, loadConfig } from '../host/config/index.js';
import { silentLogger } from '../host/index.js';
import { MemoryAuditLog } from '../host/policy/memory-audit-log.js';
import { fixture, hasCGuests, sharedCacheDir } from './helpers.js';

const scratch = mkdtempSync(join(tmpdir(), 'toolhost-anchors-'));
const ELEVATED = { policy: { privilege_level: 'ELEVATED' } };
const PUBLIC_KEY = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ type: 'spki', format: 'pem' }).toString();

/** A project: `keys/cosign.pub`, `work/`, and a toolhost.yaml loading fs_attack ELEVATED with `lines` appended. */
function project(lines: string[], grant: string[] = []): { dir: string; file: string; key: string } {
  const dir = mkdtempSync(join(scratch, 'project-'));
  mkdirSync(join(dir, 'keys'));
  mkdirSync(join(dir, 'work'));
  const key = join(dir, 'keys', 'cosign.pub');
  writeFileSync(key, PUBLIC_KEY);
  const file = join(dir, 'toolhost.yaml');
  writeFileSync(file, [
    'host:',
    '  pool:',
    `    cache_dir: ${sharedCacheDir}`,
    '    threads: 1',
    '    containment: thread',
    'tools:',
    `  - path: ${fixture('fs_attack')}`,
    '    grant:',
    '      privilege: elevated',
    ...grant,
    ...lines,
    '',
  ].join('\n'));
  return { dir, file, key };
}

async function configError(file: string): Promise<ConfigError> {
  const error = await loadConfig(file, { env: {} }).catch((thrown: unknown) => thrown);
  expect(error).toBeInstanceOf(ConfigError);
  return error as ConfigError;
}

describe('a writable worktree over a trust anchor is refused at config load', () => {
  it('the publisher key distribution.verify names (cosign.pub), at the line naming it', async () => {
    const { file } = project(['distribution:', '  verify:', '    keys:', '      - keys/cosign.pub'], ['      worktree: keys']);
    const error = await configError(file);
    // Line 14 is the key's own line: the message points there, names the grant and what the path is.
    expect(error.message).toMatch(/toolhost\.yaml:14:\d+: .*writable worktree granted to tools\[0\].*holds a publisher key remote components are verified with .*cosign\.pub/);
  });

  it("a tool entry's own verify key, and the trusted_root", async () => {
    const keyOfTool = project(['    verify:', '      keys: [keys/cosign.pub]'], ['      worktree: keys']);
    expect((await configError(keyOfTool.file)).message).toMatch(/toolhost\.yaml:12:\d+: .*holds a publisher key/);
    const root = project(['distribution:', '  verify:', '    trusted_root: keys/trusted_root.json', '    identities: [{ issuer: "https://issuer.example", subject: "ci@example.com" }]'], ['      worktree: keys']);
    expect((await configError(root.file)).message).toMatch(/toolhost\.yaml:13:\d+: .*holds the Sigstore trusted root/);
  });

  it('the lock, even when it is a symlink into the worktree', async () => {
    const { dir, file } = project([], ['      worktree: work']);
    writeFileSync(join(dir, 'work', 'real.lock'), '{}\n');
    symlinkSync(join(dir, 'work', 'real.lock'), join(dir, 'toolhost.lock'));
    expect((await configError(file)).message).toMatch(/holds the lock file that pins remote components/);
  });

  it('the store (distribution.store_dir)', async () => {
    const { file } = project(['distribution:', '  store_dir: work/store'], ['      worktree: work']);
    expect((await configError(file)).message).toMatch(/toolhost\.yaml:12:\d+: .*holds the store of fetched components/);
  });

  it('control: a worktree elsewhere, or a read-only grant over the keys, loads', async () => {
    const elsewhere = project(['distribution:', '  verify:', '    keys: [keys/cosign.pub]'], ['      worktree: work']);
    await expect(loadConfig(elsewhere.file, { env: {} })).resolves.toBeDefined();
    const readOnly = project(['distribution:', '  verify:', '    keys: [keys/cosign.pub]'], ['      worktree: keys']);
    writeFileSync(readOnly.file, readFileSync(readOnly.file, 'utf8').replace('privilege: elevated', 'privilege: default'));
    await expect(loadConfig(readOnly.file, { env: {} })).resolves.toBeDefined();
  });
});

describe.runIf(hasCGuests)('per call, a worktree that comes to hold a trust anchor is refused', () => {
  let host: Host;
  let dir: string;
  let key: string;

  beforeAll(async () => {
    ({ dir, key } = project(['distribution:', '  verify:', '    keys: [keys/cosign.pub]']));
    // The lock is a link into a directory of its own: a worktree there holds the lock, not the config.
    mkdirSync(join(dir, 'locks'));
    writeFileSync(join(dir, 'locks', 'real.lock'), '{"version":1,"components":{}}\n');
    symlinkSync(join(dir, 'locks', 'real.lock'), join(dir, 'toolhost.lock'));
    ({ host } = await openHost({ configPath: join(dir, 'toolhost.yaml'), overrides: { logger: silentLogger, audit: new MemoryAuditLog() } }));
  });
  afterAll(async () => {
    await host.close();
  });

  it('refuses an ELEVATED call whose worktree holds the configured cosign.pub, and the key is unchanged', async () => {
    const call = host.registry.execute('write', { path: '/worktree/cosign.pub', content: 'attacker key' }, { ...ELEVATED, workingDir: join(dir, 'keys'), callId: 'replace-key' });
    await expect(call).rejects.toMatchObject({ code: 'PERMISSION_DENIED', callId: 'replace-key', details: { reason: 'host-owned-path', kind: 'verify-key', owned: key } });
    expect(readFileSync(key, 'utf8')).toBe(PUBLIC_KEY);
  });

  it('refuses a worktree that holds the lock (through the link beside the config)', async () => {
    const call = host.registry.execute('read', { path: '/worktree/absent' }, { ...ELEVATED, workingDir: join(dir, 'locks') });
    await expect(call).rejects.toMatchObject({ code: 'PERMISSION_DENIED', details: { reason: 'host-owned-path', kind: 'lock' } });
  });

  it('control: an ELEVATED call writes a worktree elsewhere', async () => {
    const result = await host.registry.execute('write', { path: '/worktree/out.txt', content: 'fine' }, { ...ELEVATED, workingDir: join(dir, 'work') });
    expect(result.structuredContent).toEqual({ ok: true });
  });

  it("an embedder's registry: distribution.verify's key and trusted root", async () => {
    const trust = mkdtempSync(join(scratch, 'embedder-'));
    mkdirSync(join(trust, 'root'));
    const registry = createRegistry({
      logger: silentLogger,
      audit: new MemoryAuditLog(),
      distribution: { verify: { keys: [join(trust, 'cosign.pub')], trustedRoot: join(trust, 'root', 'trusted_root.json') } },
      sandbox: { cacheDir: sharedCacheDir, threads: 1 },
    });
    try {
      await registry.registerWasmTools(fixture('fs_attack'), { grant: { privilege: 'ELEVATED' } });
      await expect(registry.execute('read', { path: '/worktree/absent' }, { ...ELEVATED, workingDir: trust })).rejects.toMatchObject({ code: 'PERMISSION_DENIED', details: { reason: 'host-owned-path', kind: 'verify-key' } });
      await expect(registry.execute('read', { path: '/worktree/absent' }, { ...ELEVATED, workingDir: join(trust, 'root') })).rejects.toMatchObject({ code: 'PERMISSION_DENIED', details: { kind: 'trusted-root' } });
    } finally {
      await registry.close();
    }
  });
});
