/**
 * From `toolhost init` to a signed, published tool another host pulls,
 * verifies and runs: the project's `npm run publish` script is
 * `toolhost publish dist/NAME.wasm` after a build; run (without the build,
 * the component put in place) against a real registry with a signing key,
 * and a second directory's toolhost.yaml names it by oci:// with the public
 * key: `toolhost pull` pins it, `toolhost list` and `call` run it.
 */
import { generateKeyPairSync } from 'node:crypto';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initProject } from '../../host/authoring/index.js';
import { example } from '../helpers.js';
import { runCli } from '../cli-runner.js';
import { OciRegistry, hasRegistry } from '../oci-registry.js';

describe.skipIf(!hasRegistry)('init → npm run publish → another host', () => {
  const registry = new OciRegistry();
  const dir = mkdtempSync(join(tmpdir(), 'toolhost-initpub-'));
  beforeAll(() => registry.start(), 30_000);
  afterAll(() => registry.close());

  it('gives every init template a publish script that pushes the built component', async () => {
    for (const lang of ['ts', 'js', 'c'] as const) {
      const report = await initProject(join(dir, `p-${lang}`), { lang, name: 'greeter', toolhostSpec: '^0.0.0' });
      const manifest = JSON.parse(readFileSync(join(report.dir, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
      expect(manifest.scripts.publish).toBe('npm run build && toolhost publish dist/greeter.wasm');
    }
  });

  it('publishes signed with the script\'s command; a second directory pulls, pins and runs it', async () => {
    const project = (await initProject(join(dir, 'author'), { lang: 'c', name: 'greeter', toolhostSpec: '^0.0.0' })).dir;
    mkdirSync(join(project, 'dist'), { recursive: true });
    copyFileSync(example('ctools'), join(project, 'dist', 'greeter.wasm'));
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    writeFileSync(join(project, 'key.pem'), privateKey.export({ type: 'pkcs8', format: 'pem' }));
    const script = (JSON.parse(readFileSync(join(project, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts.publish!;
    // `npm run publish -- oci://… --sign-key key.pem`, past the build step.
    const command = script.split(' && ').at(-1)!.split(' ').slice(1);
    const target = `oci://${registry.host}/acme/greeter:v1`;
    const published = await runCli([...command, target, '--sign-key', 'key.pem'], 90_000, { cwd: project, env: { TOOLHOST_LOG: 'error' } });
    expect(published.stderr).toBe('');
    const report = JSON.parse(published.stdout) as { manifestDigest: string; signature: string };
    expect(report.signature).toBe(`${report.manifestDigest.replace(':', '-')}.sig`);

    const consumer = mkdtempSync(join(dir, 'consumer-'));
    writeFileSync(join(consumer, 'acme.pub'), publicKey.export({ type: 'spki', format: 'pem' }));
    writeFileSync(join(consumer, 'toolhost.yaml'), `tools:\n  - path: ${target}\n    verify: { keys: [acme.pub] }\ndistribution:\n  store_dir: ./store\n`);
    const cli = (args: string[]) => runCli(args, 90_000, { cwd: consumer, env: { TOOLHOST_LOG: 'error' } });
    const pulled = await cli(['pull']);
    expect(pulled.stderr).toBe('');
    expect(JSON.parse(readFileSync(join(consumer, 'toolhost.lock'), 'utf8'))).toMatchObject({ components: { [target]: { manifestDigest: report.manifestDigest } } });
    const called = await cli(['call', 'echo', '--args', '{"published":true}']);
    expect(called.stderr).toBe('');
    expect(JSON.parse(called.stdout)).toEqual({ published: true });
  }, 180_000);
});
