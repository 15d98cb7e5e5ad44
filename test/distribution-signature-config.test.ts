/**
 * The signature settings come from toolhost.yaml (issue 35, T1 and T4):
 * `distribution.max_signature_layers`, `distribution.max_signature_bytes` and
 * `verify.reference_aliases` (global, and a tool's own) resolve into the
 * distribution options; values out of range or of the wrong shape are
 * refused when the config is loaded.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../host/config/index.js';

describe('signature settings in toolhost.yaml', () => {
  const dir = mkdtempSync(join(tmpdir(), 'toolhost-sigconfig-'));
  const file = join(dir, 'toolhost.yaml');

  it('resolves the caps and the reference aliases, and leaves the defaults to the fetcher when absent', async () => {
    writeFileSync(file, [
      'distribution:',
      '  max_signature_layers: 32',
      '  max_signature_bytes: 131072',
      '  verify:',
      '    keys: [acme.pub]',
      '    reference_aliases: { "mirror.internal:5000/acme": "ghcr.io/acme" }',
      '',
    ].join('\n'));
    const { resolved } = await loadConfig(file, { env: {} });
    expect(resolved.distribution).toMatchObject({ maxSignatureLayers: 32, maxSignatureBytes: 131072, verify: { keys: [join(dir, 'acme.pub')], referenceAliases: { 'mirror.internal:5000/acme': 'ghcr.io/acme' } } });
    writeFileSync(file, 'distribution:\n  verify: { keys: [acme.pub] }\n');
    const plain = (await loadConfig(file, { env: {} })).resolved.distribution;
    expect(plain.maxSignatureLayers).toBeUndefined();
    expect(plain.maxSignatureBytes).toBeUndefined();
  });

  it('refuses a cap out of range and an alias that is not a name', async () => {
    for (const line of ['  max_signature_layers: 0', '  max_signature_layers: 5000', '  max_signature_bytes: 100', '  verify: { keys: [a.pub], reference_aliases: { "mirror/acme": "ghcr.io/acme@sha256:00" } }', '  verify: { keys: [a.pub], reference_aliases: ["ghcr.io/acme"] }']) {
      writeFileSync(file, `distribution:\n${line}\n`);
      await expect(loadConfig(file, { env: {} }), line).rejects.toBeInstanceOf(ConfigError);
    }
  });
});
