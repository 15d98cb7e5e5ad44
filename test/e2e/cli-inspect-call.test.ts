/**
 * The smaller CLI snags of issue 41, through the built CLI:
 * - `call` needs no `--args '{}'` for a tool without arguments, and prints the
 *   content items a tool returned (`{content, structuredContent}`) instead of
 *   `null` or the bare value; a JSON-only tool prints its value as before;
 * - `list` and `inspect` show a 0.2.0 tool's title, annotations and icons;
 * - `inspect oci://…` fetches and verifies the source as a load does (a
 *   wrong key is refused), then reads it;
 * - `call --help` says what `--load` does beside a toolhost.yaml.
 */
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../cli-runner.js';
import { root } from '../helpers.js';
import { OciRegistry, Pusher, hasRegistry } from '../oci-registry.js';

const rich = join(root, 'test', 'fixtures', 'dist', 'mcp_rich.wasm');
const dir = mkdtempSync(join(tmpdir(), 'toolhost-cli-snags-'));
const cli = (args: string[]) => runCli(args, 120_000, { cwd: dir, env: { TOOLHOST_LOG: 'error' } });

describe('toolhost call and inspect, as a new user meets them', () => {
  it('calls a tool without --args, and prints its content items', async () => {
    const run = await cli(['call', 'content_only', '--load', rich]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({ content: [{ type: 'text', text: 'only content' }] });
    const full = await cli(['call', 'rich', '--load', rich]);
    expect(full.code).toBe(0);
    const printed = JSON.parse(full.stdout) as { content: Array<{ type: string }>; structuredContent: unknown };
    expect(printed.structuredContent).toEqual({ ok: true });
    expect(printed.content.map((item) => item.type)).toEqual(['text', 'image', 'audio', 'resource_link', 'resource', 'resource']);
  }, 240_000);

  it('prints a JSON-only tool\'s value as before (control)', async () => {
    const run = await cli(['call', 'value_only', '--load', rich, '--args', '{}']);
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({ n: 1 });
  }, 120_000);

  it('shows titles, annotations and icons in list and inspect', async () => {
    const listed = await cli(['list', '--load', rich]);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(/rich {2}\(sandboxed[^\n]*\n {2}Returns one content item of every kind\.\n {2}title: Rich content\n {2}annotations: readOnlyHint=true, destructiveHint=false, idempotentHint=true, openWorldHint=false\n {2}icon: data:image\/png;base64,iVBORw0KGgo= \(image\/png 48x48\)/);
    const json = JSON.parse((await cli(['list', '--load', rich, '--json'])).stdout) as Array<{ name: string; title?: string; icons?: unknown[] }>;
    expect(json.find((tool) => tool.name === 'rich')).toMatchObject({ title: 'Rich content', icons: [{ src: 'data:image/png;base64,iVBORw0KGgo=', mimeType: 'image/png', sizes: ['48x48'] }] });
    const inspected = JSON.parse((await cli(['inspect', rich, '--json'])).stdout) as { tools: Array<{ name: string; title?: string; annotations?: object }> };
    expect(inspected.tools.find((tool) => tool.name === 'rich')).toMatchObject({ title: 'Rich content', annotations: { readOnlyHint: true, destructiveHint: false } });
  }, 240_000);

  it('says in call --help what --load does next to a toolhost.yaml', async () => {
    const help = await cli(['call', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout.replace(/\s+/g, ' ')).toMatch(/--load <path> .*added to the tools of the config \(\.\/toolhost\.yaml or --config\) when there is one, else used instead of the example tools/);
    expect(help.stdout).not.toMatch(/--args <json> +the arguments, as JSON\n/);
  }, 60_000);
});

describe.skipIf(!hasRegistry)('toolhost inspect oci://…', () => {
  const registry = new OciRegistry();
  const author = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const stranger = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const pub = (name: string, key: typeof author): string => {
    const file = join(dir, `${name}.pub`);
    writeFileSync(file, key.publicKey.export({ type: 'spki', format: 'pem' }));
    return file;
  };
  let digest = '';
  beforeAll(async () => {
    await registry.start();
    const push = new Pusher(registry.host, 'acme/rich');
    digest = await push.component('v1', new Uint8Array(readFileSync(rich)));
    await push.cosignSign(digest, author.privateKey);
  }, 60_000);
  afterAll(() => registry.close());

  it('fetches, verifies and reads a signed source', async () => {
    const run = await cli(['inspect', `oci://${registry.host}/acme/rich:v1`, '--verify-key', pub('author', author), '--json']);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const report = JSON.parse(run.stdout) as { path: string; remote: { manifestDigest: string }; wit: string; tools: Array<{ name: string }> };
    expect(report.remote.manifestDigest).toBe(digest);
    expect(report.wit).toContain('export toolhost:tool/tool@0.2.0');
    expect(report.tools.map((tool) => tool.name)).toContain('rich');
  }, 120_000);

  it('refuses it under a key that did not sign it, as a load would', async () => {
    const run = await cli(['inspect', `oci://${registry.host}/acme/rich:v1`, '--verify-key', pub('stranger', stranger)]);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(/"code":"SOURCE_UNTRUSTED"/);
  }, 120_000);
});
