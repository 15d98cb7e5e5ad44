/**
 * The docs cannot drift from the code (issue 29): what README.md and docs/*.md (authoring.md, the limits and CLI
 * pages the README's reference moved to in issue 41) claim, checked against the host. The error shape of a JS
 * exception (through `defineComponent`, as the templates write tools), the budgets the docs say are enforced, the
 * error codes the limits tables name, and the docs' examples: every TS/JS block that exports `tool` bundles;
 * authoring.md's examples are type-checked (the project's tsc and tsconfig), built and run in projects
 * `toolhost init` made, in both worlds (issue 41): the first example (0.2.0, as init writes) streams and keeps
 * state as the testing section says, and the testing section's own vitest file passes against it in that project;
 * the worktree example (0.1.0, the world set as the guide says) reads a granted worktree and is refused `../` and
 * absolute paths; the sampling/elicitation example (0.2.0) runs under the grant the guide's toolhost.yaml gives
 * it, asks the caller, and a refusal reaches the caller with the host's code; the C example builds and answers in
 * both worlds; a 0.1.0 import in a 0.2.0 project is refused with a hint, not wizer's ReferenceError.
 */
import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { bundleGuest } from '../../host/authoring/js.js';
import { buildProject } from '../../host/authoring/project.js';
import { typeCheckProject } from '../../host/authoring/typecheck.js';
import { loadConfig } from '../../host/config/load.js';
import { ERROR_CODES } from '../../host/index.js';
import { collect, example, fixture, hasCGuests, makeRegistry, root, sharedCacheDir } from '../helpers.js';
import { initLinkedProject } from '../init-project.js';

const readme = readFileSync(join(root, 'README.md'), 'utf8');
const authoring = readFileSync(join(root, 'docs', 'authoring.md'), 'utf8');
/** README.md and every page of docs/, by name. */
const docs: ReadonlyArray<readonly [string, string]> = [
  ['README.md', readme],
  ...readdirSync(join(root, 'docs')).filter((name) => name.endsWith('.md')).sort().map((name) => [`docs/${name}`, readFileSync(join(root, 'docs', name), 'utf8')] as const),
];
const page = (name: string): string => docs.find(([candidate]) => candidate === name)?.[1] ?? '';

/** `vitest run` in a project, as its `npm test` runs it, with this run's transpile cache; the exit code and output. */
function projectVitest(dir: string): Promise<{ code: number; output: string }> {
  // Not this run's own vitest variables: the project's vitest is a run of its own.
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('VITEST') && key !== 'TEST'));
  return new Promise((resolve) => {
    execFile(process.execPath, [join(root, 'node_modules', 'vitest', 'vitest.mjs'), 'run'], { cwd: dir, env: { ...env, TOOLHOST_CACHE_DIR: sharedCacheDir, NO_COLOR: '1', CI: 'true' }, timeout: 280_000, maxBuffer: 16 << 20 }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, output: `${stdout}\n${stderr}` });
    });
  });
}
const scratch = mkdtempSync(join(tmpdir(), 'toolhost-docs-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** The fenced ```ts / ```js blocks (or those of `languages`) of a Markdown text, unindented. */
function codeBlocks(markdown: string, languages = 'ts|js|typescript|javascript'): string[] {
  const blocks: string[] = [];
  for (const match of markdown.matchAll(new RegExp(`^( *)\`\`\`(?:${languages})\n([\\s\\S]*?)^\\1\`\`\``, 'gm'))) {
    const indent = match[1]!.length;
    blocks.push(match[2]!.split('\n').map((line) => line.slice(Math.min(indent, line.length - line.trimStart().length))).join('\n'));
  }
  return blocks;
}

describe('what the docs say about a JS tool that throws', () => {
  const registry = makeRegistry();
  afterAll(() => registry.close());

  it('docs/authoring.md says UNCAUGHT_EXCEPTION with the stack, and no page of the docs says INTERNAL', () => {
    expect(authoring).toMatch(/`details\.code` `UNCAUGHT_EXCEPTION`/);
    expect(authoring).toMatch(/`details\.details\.stack`/);
    for (const [name, text] of docs) {
      expect(text, name).not.toMatch(/into the tool-error `INTERNAL`/);
      // Any page that names the code says what the guide says.
      if (/`details\.code` `UNCAUGHT_EXCEPTION`/.test(text)) expect(text, name).toMatch(/stack/);
    }
  });

  it('is what a defineComponent tool that throws TypeError("boom") gives the caller', async () => {
    await registry.registerWasmTools(fixture('kit_thrower'));
    const result = await registry.execute('kit_type_error', {});
    expect(result.error).toMatchObject({ code: 'TOOL_ERROR', message: 'TypeError: boom', details: { code: 'UNCAUGHT_EXCEPTION', details: { name: 'TypeError', tool: 'kit_type_error' } } });
    const { stack } = (result.error!.details as { details: { stack?: unknown } }).details;
    expect(typeof stack === 'string' && stack.length > 0, 'a JS stack').toBe(true);
    const rejected = await registry.execute('kit_rejection', {});
    expect(rejected.error).toMatchObject({ code: 'TOOL_ERROR', message: 'later', details: { code: 'UNCAUGHT_EXCEPTION' } });
  });
});

describe('what the docs say is enforced', () => {
  it('no page says any budget waits for a later release, and the CLI reference says every policy field is enforced', () => {
    for (const [name, text] of docs) expect(text, name).not.toMatch(/upcoming releases?|in this release|only the wall clock/i);
    expect(page('docs/cli.md')).toMatch(/Every field is enforced/);
  });

  it('names only real error codes in the limits tables', () => {
    const limits = page('docs/limits.md');
    expect(limits.indexOf('## Budgets'), 'docs/limits.md has the budgets table').toBeGreaterThanOrEqual(0);
    expect(authoring.indexOf('## Limits a tool should expect'), 'docs/authoring.md has its limits table').toBeGreaterThanOrEqual(0);
    const tables = [limits.slice(limits.indexOf('## Budgets')), authoring.slice(authoring.indexOf('## Limits a tool should expect'))].map((text) => text.slice(0, text.indexOf('\n\n', text.indexOf('|'))));
    expect(tables[0]!.split('\n').filter((line) => line.startsWith('| ')).length, 'the whole budgets table').toBeGreaterThan(40);
    const named = new Set(tables.flatMap((table) => [...table.matchAll(/`([A-Z]+(?:_[A-Z]+)*_(?:EXCEEDED|TIMEOUT|CRASHED|DENIED|INVALID|INTEGRITY|BOUND))`/g)].map((match) => match[1]!)));
    expect(named.size).toBeGreaterThan(4);
    for (const code of named) expect(Object.keys(ERROR_CODES), code).toContain(code);
  });

  describe.runIf(hasCGuests)('the budget fields', () => {
    const registry = makeRegistry();
    afterAll(() => registry.close());

    it('budget_cpu_ms, memory_mb, budget_wall_ms and worktree_required each end a call with their code', async () => {
      await registry.registerWasmTools(fixture('hostile'));
      await registry.registerWasmTools(example('files'), { grant: { privilege: 'DEFAULT' }, defaultPolicy: { privilege_level: 'DEFAULT', worktree_required: true } });
      expect((await registry.execute('spin', {}, { policy: { budget_cpu_ms: 100, timeout: '20s' } })).error?.code).toBe('CPU_BUDGET_EXCEEDED');
      expect((await registry.execute('memory_bomb', { mb: 1024 }, { policy: { memory_mb: 64 } })).error?.code).toBe('MEMORY_LIMIT_EXCEEDED');
      expect((await registry.execute('spin', {}, { policy: { budget_wall_ms: 200, timeout: '20s' } })).error?.code).toBe('WALL_TIMEOUT');
      await expect(registry.execute('read_file', { path: 'x' })).rejects.toMatchObject({ code: 'WORKTREE_NOT_BOUND' });
    });
  });
});

describe('the docs’ TypeScript examples', () => {
  const blocks = docs.flatMap(([, text]) => codeBlocks(text)).filter((block) => /export const tool\b/.test(block));

  it('each block that exports a tool bundles (its imports exist)', async () => {
    expect(blocks.length).toBeGreaterThanOrEqual(2);
    for (const [i, block] of blocks.entries()) {
      const dir = join(scratch, `block-${i}`);
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, 'index.ts'), block);
      await expect(bundleGuest(join(dir, 'index.ts'), dir), block.slice(0, 200)).resolves.toMatchObject({ code: expect.any(String) });
    }
  });

  /** A TypeScript project `toolhost init` made, holding `source` as src/index.ts, for `world`; type-checked and built. */
  async function builtInInitProject(name: string, source: string, world: '0.1.0' | '0.2.0'): Promise<string> {
    const dir = await initLinkedProject(join(scratch, name), 'ts');
    writeFileSync(join(dir, 'src', 'index.ts'), source);
    rmSync(join(dir, 'test'), { recursive: true, force: true }); // the template's test is for the template's tool
    const manifestPath = join(dir, 'package.json');
    const manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as { toolhost: { world: string } };
    expect(manifest.toolhost.world, 'toolhost init writes the 0.2.0 world').toBe('0.2.0');
    if (world !== '0.2.0') writeFileSync(manifestPath, JSON.stringify({ ...manifest, toolhost: { ...manifest.toolhost, world } }, null, 2));
    await expect(typeCheckProject(dir), 'the example type-checks under the project\'s tsconfig').resolves.toMatchObject({ checked: true });
    return (await buildProject(dir)).outFile;
  }

  it('the first example, in a project toolhost init made (0.2.0), streams and keeps state as the testing section says', async () => {
    const block = blocks.find((candidate) => candidate.includes("name: 'shout'"));
    expect(block, 'docs/authoring.md starts with the shout example').toBeDefined();
    expect(authoring.indexOf(block!.slice(0, 80)), 'it is the guide\'s first TypeScript example').toBe(authoring.indexOf('```ts\n') + 6);
    // Named my-tool, as the guide's commands and its testing section name it (dist/my-tool.wasm).
    const outFile = await builtInInitProject('my-tool', block!, '0.2.0');
    expect(outFile).toBe(join(scratch, 'my-tool', 'dist', 'my-tool.wasm'));
    const registry = makeRegistry();
    try {
      await registry.registerWasmTools(outFile);
      const events = await collect(registry.stream('shout', { text: 'a\nb' }, { conversationId: 'c1' }));
      // The testing section's expectations, verbatim.
      expect(events.filter((e) => e.type === 'delta').map((e) => (e as { data: unknown }).data)).toEqual([{ line: 'A' }, { line: 'B' }]);
      expect(events.at(-1)).toMatchObject({ type: 'result', data: { text: 'A\nB', shouted: 1 } });
      expect((await registry.execute('shout', { text: 'x' }, { conversationId: 'c1' })).structuredContent).toEqual({ text: 'X', shouted: 2 });
      expect((await registry.execute('shout', { text: ' ' })).error).toMatchObject({ code: 'TOOL_ERROR', details: { code: 'EMPTY' } });
    } finally {
      await registry.close();
    }
  }, 300_000);

  it('the testing section\'s vitest file, verbatim, passes against the first example in its init project', async () => {
    const testing = authoring.slice(authoring.indexOf('## Testing a tool against the real host'));
    const file = codeBlocks(testing)[0];
    expect(file, 'the testing section shows a vitest file that loads dist/my-tool.wasm').toMatch(/new URL\('\.\.\/dist\/my-tool\.wasm'/);
    const dir = join(scratch, 'my-tool');
    expect(readdirSync(join(dir, 'dist')), 'the previous test built the first example here').toContain('my-tool.wasm');
    mkdirSync(join(dir, 'test'), { recursive: true });
    writeFileSync(join(dir, 'test', 'shout.test.js'), file!);
    symlinkSync(join(root, 'node_modules', 'vitest'), join(dir, 'node_modules', 'vitest'), 'dir'); // the template's devDependency
    const run = await projectVitest(dir);
    expect(run.code, run.output).toBe(0);
    expect(run.output).toMatch(/Tests\s+1 passed/);
  }, 300_000);

  it('the sampling and elicitation example, in a project init made (0.2.0), asks its caller under the grant the guide\'s toolhost.yaml gives it', async () => {
    const block = blocks.find((candidate) => candidate.includes("name: 'summarize_for'"));
    expect(block, 'docs/authoring.md shows asking the client').toBeDefined();
    const section = authoring.slice(authoring.indexOf('### Asking the client'));
    const yaml = /```yaml\n([\s\S]*?)```/.exec(section)?.[1];
    expect(yaml, 'the section shows a toolhost.yaml grant').toMatch(/path: dist\/helper\.wasm/);
    // The project is named helper, so its build is the dist/helper.wasm the grant names.
    const outFile = await builtInInitProject('helper', block!, '0.2.0');
    const dir = join(scratch, 'helper');
    expect(outFile).toBe(join(dir, 'dist', 'helper.wasm'));
    writeFileSync(join(dir, 'toolhost.yaml'), yaml!.split('\n').map((line) => line.replace(/^ {2}/, '')).join('\n'));
    const { resolved } = await loadConfig(join(dir, 'toolhost.yaml'));
    const entry = resolved.tools[0]!;
    expect(entry.path).toBe(outFile);

    const asked: string[] = [];
    const client = {
      elicit: async (request: { message: string }) => {
        asked.push(`elicit: ${request.message}`);
        return { action: 'accept' as const, content: { reader: 'Ada' } };
      },
      sample: async (request: { maxTokens: number; messages: Array<{ content: { type: string; text?: string } }> }) => {
        asked.push(`sample ${request.maxTokens}: ${request.messages[0]!.content.text}`);
        return { role: 'assistant' as const, content: { type: 'text' as const, text: 'Short.' }, model: 'docs-model' };
      },
    };
    const granted = makeRegistry();
    const ungranted = makeRegistry();
    try {
      await granted.registerWasmTools(entry.path, entry.options);
      await ungranted.registerWasmTools(outFile);
      const answered = await granted.execute('summarize_for', { text: 'Long text.' }, { client });
      expect(answered.error).toBeUndefined();
      expect(answered.structuredContent).toEqual({ reader: 'Ada', summary: 'Short.', model: 'docs-model' });
      expect(asked).toEqual(['elicit: Who is the summary for?', 'sample 200: Summarize for Ada:\nLong text.']);
      // The guide: the tool's own refusal of a declined answer is its tool-error.
      const declined = await granted.execute('summarize_for', { text: 'x' }, { client: { ...client, elicit: async () => ({ action: 'decline' as const }) } });
      expect(declined.error).toMatchObject({ code: 'TOOL_ERROR', details: { code: 'NO_READER' } });
      // "Nothing is granted by default": without the grant the uncaught refusal reaches the caller with the host's code.
      const refused = await ungranted.execute('summarize_for', { text: 'x' }, { client });
      expect(refused.error).toMatchObject({ code: 'PERMISSION_DENIED', details: { relayedBy: 'summarize_for' } });
      // "Only a caller that can answer gets the request": a caller without hooks (the CLI, gRPC).
      expect((await granted.execute('summarize_for', { text: 'x' })).error).toMatchObject({ code: 'CLIENT_UNSUPPORTED' });
    } finally {
      await Promise.all([granted.close(), ungranted.close()]);
    }
  }, 300_000);

  describe.runIf(hasCGuests)('the C example', () => {
    const cBlock = codeBlocks(authoring, 'c')[0];

    it.each(['0.2.0', '0.1.0'] as const)('builds in a C project toolhost init made, for the %s world, and greets with escaped JSON and progress', async (world) => {
      expect(cBlock, 'docs/authoring.md shows a C tool').toMatch(/^\/\/ src\/tool\.c\n/);
      const dir = await initLinkedProject(join(scratch, `c-example-${world}`), 'c');
      rmSync(join(dir, 'src'), { recursive: true, force: true });
      rmSync(join(dir, 'test'), { recursive: true, force: true });
      mkdirSync(join(dir, 'src'));
      writeFileSync(join(dir, 'src', 'tool.c'), cBlock!);
      const manifestPath = join(dir, 'package.json');
      const manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as { toolhost: { world: string } };
      expect(manifest.toolhost.world, 'toolhost init writes the 0.2.0 world').toBe('0.2.0');
      if (world !== '0.2.0') writeFileSync(manifestPath, JSON.stringify({ ...manifest, toolhost: { ...manifest.toolhost, world } }, null, 2));
      const { outFile } = await buildProject(dir);
      const registry = makeRegistry();
      try {
        await registry.registerWasmTools(outFile);
        const events = await collect(registry.stream('hello', { name: 'A "quoted" name' }));
        expect(events.filter((e) => e.type === 'progress')).toMatchObject([{ pct: 50, message: 'greeting' }]);
        expect(events.at(-1)).toMatchObject({ type: 'result', data: { greeting: 'A "quoted" name' } });
        await expect(registry.execute('hello', {}), 'its input schema requires name').rejects.toMatchObject({ code: 'INVALID_INPUT' });
      } finally {
        await registry.close();
      }
    }, 120_000);
  });

  it('a 0.1.0 tool in a project init made for 0.2.0 is refused with what to change, not a wizer ReferenceError', async () => {
    const dir = await initLinkedProject(join(scratch, 'old-world'), 'ts');
    writeFileSync(join(dir, 'src', 'index.ts'), `import { progress } from 'toolhost:tool/host@0.1.0';
import { defineComponent } from 'toolhost/guest';
export const tool = defineComponent('old', [{ name: 'old', description: 'x', inputSchema: { type: 'object' }, streaming: false, idempotent: true, run() { progress(100, undefined); return {}; } }]);
`);
    const failure = await buildProject(dir).then(() => undefined, (error: unknown) => error as Error);
    expect(failure?.message).toMatch(/imports toolhost:tool\/host@0\.1\.0, but the project builds for the 0\.2\.0 tool world/);
    expect(failure?.message).toContain("import the host from 'toolhost:tool/host@0.2.0' and define the tools with defineMcpComponent");
    expect(failure?.message).toContain('"world": "0.1.0"');
    expect(failure?.message).not.toMatch(/ReferenceError/);
  }, 120_000);

  it('the sampling and elicitation grant the guide shows is a valid config that grants both', async () => {
    const section = authoring.slice(authoring.indexOf('### Asking the client'));
    const yaml = /```yaml\n([\s\S]*?)```/.exec(section)?.[1];
    expect(yaml, 'the section shows a toolhost.yaml grant').toBeDefined();
    // As a project's toolhost.yaml, next to the built component it names.
    const dir = join(scratch, 'grant-example');
    mkdirSync(join(dir, 'dist'), { recursive: true });
    copyFileSync(example('ctools'), join(dir, 'dist', 'helper.wasm'));
    writeFileSync(join(dir, 'toolhost.yaml'), yaml!.split('\n').map((line) => line.replace(/^ {2}/, '')).join('\n'));
    const { resolved } = await loadConfig(join(dir, 'toolhost.yaml'));
    expect(resolved.tools[0]!.options.grant).toMatchObject({ sampling: { maxRequests: 2, maxTokens: 500 }, elicitation: { maxRequests: 1 } });
  });

  it('the worktree example, in a project init made with the world set to 0.1.0, reads its granted worktree and is refused ../ and absolute paths', async () => {
    const block = blocks.find((candidate) => candidate.includes('readText'));
    expect(block, 'docs/authoring.md shows reading the worktree').toBeDefined();
    const outFile = await builtInInitProject('worktree-example', block!, '0.1.0');
    const dir = join(scratch, 'worktree-example');
    const worktree = join(dir, 'wt');
    mkdirSync(worktree);
    writeFileSync(join(worktree, 'README.md'), 'hello from the worktree');
    writeFileSync(join(dir, 'secret.txt'), 'OUTSIDE');
    const registry = makeRegistry();
    try {
      await registry.registerWasmTools(outFile, { grant: { privilege: 'DEFAULT' }, defaultPolicy: { privilege_level: 'DEFAULT' } });
      const read = await registry.execute('read_note', { path: 'README.md' }, { workingDir: worktree });
      expect(read.structuredContent).toEqual({ text: 'hello from the worktree', siblings: ['README.md'] });
      for (const path of ['../secret.txt', join(dir, 'secret.txt'), '/worktree/../secret.txt']) {
        const refused = await registry.execute('read_note', { path }, { workingDir: worktree });
        expect(refused.error, path).toMatchObject({ code: 'TOOL_ERROR', details: { code: 'FS_ERROR', details: { errno: 'not-permitted' } } });
      }
      const ungranted = await registry.execute('read_note', { path: 'README.md' }, { workingDir: worktree, policy: { privilege_level: 'MINIMAL' } });
      expect(ungranted.error).toMatchObject({ code: 'TOOL_ERROR', details: { code: 'NO_WORKTREE' } });
    } finally {
      await registry.close();
    }
  }, 300_000);
});
