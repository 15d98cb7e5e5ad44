/**
 * A docker credential helper that prints its answer (the secret) on stdout and then exits non-zero: the error
 * names the helper and its exit code, never what it printed — neither the secret nor any line of its stdout —
 * whether it is read directly or through the registry credential lookup (SOURCE_UNAVAILABLE). Control: the same
 * helper exiting 0 gives the credential, and a failing helper's stderr line is still quoted.
 */
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CredentialHelperError, runCredentialHelper } from '../host/distribution/credential-helper.js';
import { credentialFor } from '../host/distribution/credentials.js';
import { ToolhostError } from '../host/index.js';

const SECRET = 'hunter2-SUPER-SECRET-token-0123456789';
const HELPER = `#!/bin/sh
read -r server
printf '{"ServerURL":"%s","Username":"alice","Secret":"${SECRET}"}\\n' "$server"
case "$HELPER_MODE" in
  ok) exit 0 ;;
  stdout-then-fail) exit 1 ;;
  stderr-too) echo "keychain locked" >&2; exit 2 ;;
esac
`;

const dir = mkdtempSync(join(tmpdir(), 'toolhost-credstdout-'));
const bin = join(dir, 'bin');
mkdirSync(bin);
writeFileSync(join(bin, 'docker-credential-leaky'), HELPER);
chmodSync(join(bin, 'docker-credential-leaky'), 0o755);
const envFor = (mode: string): NodeJS.ProcessEnv => ({ ...process.env, PATH: `${bin}${delimiter}${process.env.PATH ?? ''}`, HELPER_MODE: mode });
const limits = { timeoutMs: 20_000, maxBytes: 64 * 1024 };

async function failure(run: () => Promise<unknown>): Promise<Error> {
  try {
    await run();
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected the helper to fail');
}

describe('a credential helper that fails after printing its answer on stdout', () => {
  it('gives the credential when the same helper exits 0', async () => {
    expect(await runCredentialHelper('leaky', 'registry.example', limits, envFor('ok'))).toEqual({ username: 'alice', password: SECRET });
  });

  it('names the helper and its exit code, never the secret it printed', async () => {
    const error = await failure(() => runCredentialHelper('leaky', 'registry.example', limits, envFor('stdout-then-fail')));
    expect(error).toBeInstanceOf(CredentialHelperError);
    expect(error.message).toMatch(/docker-credential-leaky get failed \(exit 1\)/);
    expect(error.message).not.toContain(SECRET);
    expect(error.message).not.toContain('alice');
    expect(JSON.stringify(error)).not.toContain(SECRET);
  });

  it('keeps the secret out of the SOURCE_UNAVAILABLE the registry lookup raises, details and cause included', async () => {
    const config = mkdtempSync(join(dir, 'docker-'));
    writeFileSync(join(config, 'config.json'), JSON.stringify({ credHelpers: { 'registry.example': 'leaky' } }));
    const error = await failure(() => credentialFor('registry.example', {}, { ...envFor('stdout-then-fail'), DOCKER_CONFIG: config }, { helperTimeoutMs: 20_000 }));
    expect(error).toBeInstanceOf(ToolhostError);
    expect(error).toMatchObject({ code: 'SOURCE_UNAVAILABLE', details: { reason: 'credential-helper' } });
    expect(error.message).toMatch(/docker-credential-leaky get failed \(exit 1\)/);
    const everything = `${error.message} ${JSON.stringify((error as ToolhostError).details)} ${String((error as { cause?: unknown }).cause ?? '')} ${error.stack ?? ''}`;
    expect(everything).not.toContain(SECRET);
  });

  it('still quotes the first line of a failing helper\'s stderr, and not its stdout', async () => {
    const error = await failure(() => runCredentialHelper('leaky', 'registry.example', limits, envFor('stderr-too')));
    expect(error.message).toMatch(/\(exit 2\): keychain locked$/);
    expect(error.message).not.toContain(SECRET);
  });
});
