/**
 * The tool author's commands: `toolhost init` writes a project that `toolhost
 * build` turns into a checked component the host runs; `doctor` says what is
 * missing; `--version`. (A C project: it builds in about a second. The
 * npm pack → install → init → build → test run for every language is
 * `npm run test:package`.)
 */
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../cli-runner.js';
import { hasCGuests, makeRegistry, root } from '../helpers.js';

const scratch = mkdtempSync(join(tmpdir(), 'toolhost-author-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** The title and annotations the component's author declares for `tool` (as the host loads them). */
async function declared(file: string, tool: string): Promise<{ title?: string; annotations?: unknown }> {
  const registry = makeRegistry();
  try {
    await registry.registerWasmTools(file);
    const { title, annotations } = registry.get(tool)!;
    return { title, annotations };
  } finally {
    await registry.close();
  }
}

/** A project `toolhost init` made in `scratch/name`, its package.json then saying `world`. */
async function initProject(name: string, lang: 'js' | 'c', world: string): Promise<string> {
  const dir = join(scratch, name);
  expect((await runCli(['init', dir, '--lang', lang])).code).toBe(0);
  const manifestPath = join(dir, 'package.json');
  const manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as { toolhost: Record<string, unknown> };
  writeFileSync(manifestPath, JSON.stringify({ ...manifest, toolhost: { ...manifest.toolhost, world } }, null, 2));
  return dir;
}

describe('toolhost --version', () => {
  it('prints the package version', async () => {
    const run = await runCli(['--version']);
    expect(run.code).toBe(0);
    expect(run.stdout.trim()).toBe((JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version);
  });
});

describe.concurrent('toolhost init', () => {
  it('writes a TypeScript project by default, typed against toolhost/guest', async () => {
    const dir = join(scratch, 'my-tool');
    const run = await runCli(['init', dir]);
    expect(run.code, run.stderr).toBe(0);
    expect(readdirSync(dir).sort()).toEqual(['.gitignore', 'README.md', 'package.json', 'src', 'test', 'tsconfig.json']);
    const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name: string; type: string; scripts: Record<string, string>; devDependencies: Record<string, string> };
    expect(manifest).toMatchObject({ name: 'my-tool', type: 'module', scripts: { build: 'tsc -p tsconfig.json && toolhost build', test: 'vitest run' } });
    expect(manifest.devDependencies.toolhost).toMatch(/^file:/);
    const source = readFileSync(join(dir, 'src', 'index.ts'), 'utf8');
    expect(source).toContain("from 'toolhost/guest'");
    expect(source).toContain("name: 'my_tool'");
  });

  it('refuses a directory that is not empty', async () => {
    const dir = join(scratch, 'taken');
    await runCli(['init', dir, '--lang', 'js']);
    const run = await runCli(['init', dir, '--lang', 'js']);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/is not empty/);
  });

  it('refuses an unknown language as a usage error', async () => {
    const run = await runCli(['init', join(scratch, 'rust'), '--lang', 'rust']);
    expect(run.code).toBe(2);
  });
});

describe.concurrent('toolhost build', () => {
  it('says what is missing when a directory holds no tool sources', async () => {
    const dir = mkdtempSync(join(scratch, 'empty-'));
    const run = await runCli(['build', dir]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/no tool sources found .*toolhost init/);
  });

  it.skipIf(!hasCGuests)('builds a new C project into a checked component that the host runs', async () => {
    const dir = join(scratch, 'greeter');
    expect((await runCli(['init', dir, '--lang', 'c'])).code).toBe(0);
    const built = await runCli(['build', dir, '--json']);
    expect(built.code, built.stderr).toBe(0);
    const report = JSON.parse(built.stdout) as { outFile: string; lang: string; size: number; imports: string[]; tools: Array<{ name: string; streaming: boolean }> };
    expect(report).toMatchObject({ outFile: join(dir, 'dist', 'greeter.wasm'), lang: 'c', tools: [{ name: 'greeter', streaming: true }] });
    // The SDK compiled in, nothing else: no WASI imports for a tool that does not use them.
    expect(report.imports).toEqual(['toolhost:tool/host']);

    const call = await runCli(['call', 'greeter', '--load', report.outFile, '--args', '{"name":"Ada","times":2}', '--events', '--conversation', 'c1']);
    expect(call.code, call.stderr).toBe(0);
    const events = call.stdout.trimEnd().split('\n').map((line) => JSON.parse(line) as { type: string; data?: unknown; pct?: number });
    expect(events.filter((event) => event.type === 'delta').map((event) => event.data)).toEqual([{ greeting: 'Hello, Ada!', n: 1 }, { greeting: 'Hello, Ada!', n: 2 }]);
    expect(events.filter((event) => event.type === 'progress').map((event) => event.pct)).toEqual([50, 100]);
    expect(events.at(-1)).toMatchObject({ type: 'result', data: { greetings: ['Hello, Ada!', 'Hello, Ada!'], total: 2 } });

    // A 0.2.0 tool (package.json: toolhost.world): the author's title and annotations are listed.
    expect(JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'))).toMatchObject({ toolhost: { world: '0.2.0' } });
    expect(await declared(report.outFile, 'greeter')).toEqual({ title: 'Greeter', annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: false, openWorldHint: false } });
  });

  it('builds a new JavaScript project for the 0.2.0 world, with its title and annotations', async () => {
    const dir = join(scratch, 'js-greeter');
    expect((await runCli(['init', dir, '--lang', 'js'])).code).toBe(0);
    const built = await runCli(['build', dir, '--json'], 180_000);
    expect(built.code, built.stderr).toBe(0);
    const report = JSON.parse(built.stdout) as { outFile: string };
    expect(await declared(report.outFile, 'js_greeter')).toEqual({ title: 'Greeter', annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: false, openWorldHint: false } });
    const call = await runCli(['call', 'js_greeter', '--load', report.outFile, '--args', '{"name":"Ada","times":2}']);
    expect(call.code, call.stderr).toBe(0);
    expect(JSON.parse(call.stdout)).toMatchObject({ greetings: ['Hello, Ada!', 'Hello, Ada!'], total: 2 });
  }, 240_000);

  it('says how to fix a 0.1.0 tool (defineComponent) in a project whose package.json says world 0.2.0', async () => {
    const dir = join(scratch, 'old-style');
    expect((await runCli(['init', dir, '--lang', 'js'])).code).toBe(0);
    writeFileSync(join(dir, 'src', 'index.js'), "import { defineComponent } from 'toolhost/guest';\nexport const tool = defineComponent('old', [{ name: 'old', description: 'x', inputSchema: { type: 'object' }, streaming: false, idempotent: true, run: () => ({}) }]);\n");
    const run = await runCli(['build', dir], 180_000);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('define the tools with defineMcpComponent from \'toolhost/guest/mcp\', or say "world": "0.1.0"');
  }, 240_000);

  it('builds a JS project for world 0.3.0 whose tool asks a keyed round (ask), answered through the caller\'s hooks', async () => {
    const dir = await initProject('keyed', 'js', '0.3.0');
    writeFileSync(join(dir, 'src', 'index.js'), `import { ask } from 'toolhost:tool/host@0.3.0';
import { defineMcpComponent } from 'toolhost/guest/mcp';
export const tool = defineMcpComponent('keyed', [{
  name: 'where_and_who',
  description: 'Asks the user and the roots in one round.',
  inputSchema: { type: 'object' },
  run() {
    const [who, where] = ask([
      { key: 'who', request: { tag: 'elicitation', val: { message: 'Name?', requestedSchema: JSON.stringify({ type: 'object', properties: { name: { type: 'string' } } }) } } },
      { key: 'where', request: { tag: 'roots' } },
    ]);
    return { keys: [who.key, where.key], name: JSON.parse(who.response.val.content).name, roots: where.response.val.map((root) => root.uri) };
  },
}]);
`);
    const built = await runCli(['build', dir, '--json'], 180_000);
    expect(built.code, built.stderr).toBe(0);
    const registry = makeRegistry();
    try {
      await registry.registerWasmTools((JSON.parse(built.stdout) as { outFile: string }).outFile, { grant: { elicitation: {}, roots: {} } });
      const result = await registry.execute('where_and_who', {}, { client: { elicit: async () => ({ action: 'accept', content: { name: 'Ada' } }), listRoots: async () => ({ roots: [{ uri: 'file:///src' }] }) } });
      expect(result.structuredContent).toEqual({ keys: ['who', 'where'], name: 'Ada', roots: ['file:///src'] });
    } finally {
      await registry.close();
    }
  }, 240_000);

  it('refuses world 0.3.0 for a C project, saying which worlds the C SDK builds', async () => {
    const dir = await initProject('c-keyed', 'c', '0.3.0');
    const run = await runCli(['build', dir]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('the C SDK builds for the 0.1.0 and 0.2.0 tool worlds');
  });

  it.skipIf(!hasCGuests)('reports a compile error with clang\'s message and writes nothing', async () => {
    const dir = join(scratch, 'broken');
    expect((await runCli(['init', dir, '--lang', 'c'])).code).toBe(0);
    writeFileSync(join(dir, 'src', 'tool.c'), '#include "toolhost.h"\nint oops( {\n');
    const run = await runCli(['build', dir]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/clang failed:[\s\S]*tool\.c:2/);
    expect(run.stdout).toBe('');
  });
});

describe.concurrent('toolhost doctor', () => {
  it.skipIf(!hasCGuests)('finds the toolchains and the example tools here', async () => {
    const run = await runCli(['doctor', '--json']);
    expect(run.code, run.stdout).toBe(0);
    const report = JSON.parse(run.stdout) as { ok: boolean; checks: Array<{ name: string; ok: boolean }> };
    expect(report.ok).toBe(true);
    expect(report.checks.map((check) => check.name)).toEqual(['node', 'c-toolchain', 'js-toolchain', 'cache', 'example-tools']);
  });

  it('says the C toolchain is missing, how to install it, and exits 1 on a machine without clang', async () => {
    const run = await runCli(['doctor'], 90_000, { env: { PATH: join(scratch, 'no-such-bin'), CLANG: '' } });
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/MISSING c-toolchain: C guests cannot be built: clang not found/);
    expect(run.stdout).toContain('apt-get install -y clang lld wasi-libc libclang-rt-dev-wasm32');
  });
});
