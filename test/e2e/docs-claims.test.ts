/**
 * The docs cannot drift from the code (issue 29): what README.md and docs/authoring.md claim, checked against the
 * host. The error shape of a JS exception (through `defineComponent`, as the templates write tools), the budgets
 * the README says are enforced, the error codes the limits tables name, and the docs' TypeScript examples:
 * every block that exports `tool` bundles; authoring.md's examples are type-checked (the project's tsc and
 * tsconfig), built and run in projects `toolhost init` made, one per world (issue 41): the first example (0.2.0,
 * as init writes) streams and keeps state as the testing section says, the worktree example (0.1.0, the world
 * set as the guide says) reads a granted worktree and is refused `../` and absolute paths; a 0.1.0 import in a
 * 0.2.0 project is refused with a hint, not wizer's ReferenceError; the sampling/elicitation grant the guide shows
 * is a valid config.
 */
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { bundleGuest } from '../../host/authoring/js.js';
import { buildProject } from '../../host/authoring/project.js';
import { typeCheckProject } from '../../host/authoring/typecheck.js';
import { loadConfig } from '../../host/config/load.js';
import { ERROR_CODES } from '../../host/index.js';
import { collect, example, fixture, hasCGuests, makeRegistry, root } from '../helpers.js';
import { initLinkedProject } from '../init-project.js';

const readme = readFileSync(join(root, 'README.md'), 'utf8');
const authoring = readFileSync(join(root, 'docs', 'authoring.md'), 'utf8');
const scratch = mkdtempSync(join(tmpdir(), 'toolhost-docs-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** The fenced ```ts / ```js blocks of a Markdown text, unindented. */
function codeBlocks(markdown: string): string[] {
  const blocks: string[] = [];
  for (const match of markdown.matchAll(/^( *)```(?:ts|js|typescript|javascript)\n([\s\S]*?)^\1```/gm)) {
    const indent = match[1]!.length;
    blocks.push(match[2]!.split('\n').map((line) => line.slice(Math.min(indent, line.length - line.trimStart().length))).join('\n'));
  }
  return blocks;
}

describe('what the docs say about a JS tool that throws', () => {
  const registry = makeRegistry();
  afterAll(() => registry.close());

  it('both docs say UNCAUGHT_EXCEPTION with the stack, and neither says INTERNAL', () => {
    for (const [name, text] of [['README.md', readme], ['docs/authoring.md', authoring]] as const) {
      expect(text, name).toMatch(/`details\.code` `UNCAUGHT_EXCEPTION`/);
      expect(text, name).toMatch(/stack/);
      expect(text, name).not.toMatch(/into the tool-error `INTERNAL`/);
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

describe('what the README says is enforced', () => {
  it('no longer says any budget waits for a later release', () => {
    expect(readme).not.toMatch(/upcoming releases?|in this release|only the wall clock/i);
    expect(readme).toMatch(/Every field is enforced/);
  });

  it('names only real error codes in the limits tables', () => {
    const tables = [readme.slice(readme.indexOf('### Budgets')), authoring.slice(authoring.indexOf('## Limits a tool should expect'))].map((text) => text.slice(0, text.indexOf('\n\n', text.indexOf('|'))));
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
  const blocks = [...codeBlocks(authoring), ...codeBlocks(readme)].filter((block) => /export const tool\b/.test(block));

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
    const outFile = await builtInInitProject('first-example', block!, '0.2.0');
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
