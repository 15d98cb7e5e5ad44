/**
 * toolhost.lock's `pinned` and `manifestDigest` must name the same manifest
 * of the source's repository: the load fetches by `manifestDigest`, so a lock
 * whose `pinned` says another digest (or another repository) would load
 * something else than it reads as. Such a lock is refused with INVALID_INPUT
 * (`details.reason: "lock-mismatch"`) naming both and what to run; so is a
 * host whose config sits beside one. Issue 41: the two were never compared.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadHostConfig } from '../host/compose/host.js';
import { readLock } from '../host/distribution/lock.js';

const A = `sha256:${'a'.repeat(64)}`;
const B = `sha256:${'b'.repeat(64)}`;
const SOURCE = 'oci://registry.example:5000/acme/tool:v1';
const dir = mkdtempSync(join(tmpdir(), 'toolhost-lockpins-'));
let count = 0;

function lockFile(components: Record<string, unknown>): string {
  const file = join(mkdtempSync(join(dir, `lock${(count += 1)}-`)), 'toolhost.lock');
  writeFileSync(file, JSON.stringify({ version: 1, components }));
  return file;
}
const entry = (fields: Record<string, unknown>): Record<string, unknown> => ({ pinned: `oci://registry.example:5000/acme/tool@${A}`, manifestDigest: A, layerDigest: B, size: 10, signer: 'skipped', ...fields });
const refusal = (file: string): unknown => {
  try {
    readLock(file);
  } catch (error) {
    return error;
  }
  return undefined;
};

describe('toolhost.lock cross-checks pinned against manifestDigest', () => {
  it('refuses an entry whose pinned digest is not its manifestDigest, naming both and toolhost update', () => {
    const error = refusal(lockFile({ [SOURCE]: entry({ pinned: `oci://registry.example:5000/acme/tool@${B}` }) }));
    expect(error).toMatchObject({ code: 'INVALID_INPUT', details: { reason: 'lock-mismatch', source: SOURCE, pinned: `oci://registry.example:5000/acme/tool@${B}`, manifestDigest: A } });
    expect((error as Error).message).toMatch(new RegExp(`pins .*@${B} but its manifestDigest is ${A}.*run toolhost update ${SOURCE.replace(/[.:/]/g, '\\$&')}`));
  });

  it('refuses an entry pinned to another repository, or an OCI entry without a manifestDigest', () => {
    expect(refusal(lockFile({ [SOURCE]: entry({ pinned: `oci://registry.example:5000/evil/tool@${A}` }) }))).toMatchObject({ details: { reason: 'lock-mismatch' } });
    const { manifestDigest: _dropped, ...noDigest } = entry({});
    expect(refusal(lockFile({ [SOURCE]: noDigest }))).toMatchObject({ details: { reason: 'lock-mismatch' } });
  });

  it('refuses a URL entry pinned to another URL', () => {
    const url = `https://example.com/tool.wasm#sha256=${'c'.repeat(64)}`;
    expect(refusal(lockFile({ [url]: { pinned: `https://example.com/other.wasm#sha256=${'c'.repeat(64)}`, layerDigest: B, size: 1, signer: 'pinned' } }))).toMatchObject({ details: { reason: 'lock-mismatch' } });
  });

  it('refuses to open a host beside a mismatched lock', async () => {
    const file = lockFile({ [SOURCE]: entry({ pinned: `oci://registry.example:5000/acme/tool@${B}` }) });
    const config = join(file, '..', 'toolhost.yaml');
    writeFileSync(config, `tools:\n  - path: ${SOURCE}\n    verify: { skip: true }\n`);
    await expect(loadHostConfig({ configPath: config })).rejects.toMatchObject({ code: 'INVALID_INPUT', details: { reason: 'lock-mismatch' } });
  });

  it('reads a consistent lock (control): OCI and URL entries as pull writes them', () => {
    const url = `https://example.com/tool.wasm#sha256=${'c'.repeat(64)}`;
    const pinnedSource = `oci://registry.example:5000/acme/pinned@${A}`;
    const file = lockFile({
      [SOURCE]: entry({}),
      [pinnedSource]: entry({ pinned: pinnedSource }),
      [url]: { pinned: url, layerDigest: `sha256:${'c'.repeat(64)}`, size: 1, signer: 'pinned' },
    });
    expect(Object.keys(readLock(file) ?? {})).toHaveLength(3);
  });
});
