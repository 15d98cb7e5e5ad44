/**
 * The OCI config `toolhost publish` writes names the component's real world:
 * the version of the tool interface it exports (a 0.2.0 component says 0.2.0,
 * a 0.1.0 one 0.1.0, one exporting prompts and resources `mcp-provider`), its
 * exports without stray names, and its imports with their versions, as
 * another registry client reads them (plain fetch). Issue 41: every config
 * said `toolhost:tool/tool-provider@0.1.0`, with an export `tool` and
 * unversioned imports.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../cli-runner.js';
import { example, root } from '../helpers.js';
import { OciRegistry, hasRegistry } from '../oci-registry.js';

interface WasmConfig { component: { exports: string[]; imports: string[]; target: string } }

describe.skipIf(!hasRegistry)('toolhost publish writes the component\'s own world into the OCI config', () => {
  const registry = new OciRegistry();
  beforeAll(() => registry.start(), 30_000);
  afterAll(() => registry.close());

  const publishedConfig = async (file: string, repository: string): Promise<WasmConfig> => {
    const run = await runCli(['publish', file, `oci://${registry.host}/${repository}:v1`], 90_000, { env: { TOOLHOST_LOG: 'error' } });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const { manifestDigest } = JSON.parse(run.stdout) as { manifestDigest: string };
    const manifest = await (await fetch(`http://${registry.host}/v2/${repository}/manifests/${manifestDigest}`, { headers: { accept: 'application/vnd.oci.image.manifest.v1+json' } })).json() as { config: { digest: string } };
    return await (await fetch(`http://${registry.host}/v2/${repository}/blobs/${manifest.config.digest}`)).json() as WasmConfig;
  };

  it('names tool-provider@0.2.0 for a 0.2.0 component, with its one export and versioned imports', async () => {
    const { component } = await publishedConfig(example('ctools'), 'acme/ctools');
    expect(component.target).toBe('toolhost:tool/tool-provider@0.2.0');
    expect(component.exports).toEqual(['toolhost:tool/tool@0.2.0']);
    expect(component.imports).toEqual(expect.arrayContaining(['toolhost:tool/host@0.2.0', 'toolhost:tool/types@0.2.0']));
    expect(component.imports.every((name) => /@\d+\.\d+\.\d+/.test(name))).toBe(true);
  }, 120_000);

  it('names mcp-provider@0.2.0 for a component exporting prompts and resources', async () => {
    const { component } = await publishedConfig(join(root, 'test', 'fixtures', 'dist', 'mcp_surface.wasm'), 'acme/surface');
    expect(component.target).toBe('toolhost:tool/mcp-provider@0.2.0');
    expect(component.exports).toEqual(['toolhost:tool/tool@0.2.0', 'toolhost:tool/prompts@0.2.0', 'toolhost:tool/resources@0.2.0']);
  }, 120_000);

  it('still names tool-provider@0.1.0 for a 0.1.0 component (control)', async () => {
    const { component } = await publishedConfig(join(root, 'test', 'fixtures', 'dist', 'counter.wasm'), 'acme/counter');
    expect(component.target).toBe('toolhost:tool/tool-provider@0.1.0');
    expect(component.exports).toEqual(['toolhost:tool/tool@0.1.0']);
  }, 120_000);
});
