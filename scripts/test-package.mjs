#!/usr/bin/env node
// The package as a new user gets it, end to end (too slow for `npm test`):
//
//   npm pack → a fresh project under the temp directory → npm install the tarball
//   → the README's library example, verbatim → toolhost --version / doctor
//   → for each language: toolhost init → npm install → npm run build → npm test → toolhost call
//   → a TypeScript tool that reads its worktree (granted by a toolhost.yaml), refused `..` and absolute paths
//   → `toolhost dev` serving a TypeScript tool under its toolhost.yaml to an MCP client: a worktree read, an
//     elicitation, a refused sample() as PERMISSION_DENIED, a type error refused with tsc's message
//
//   node scripts/test-package.mjs                 every language (ts, c, js)
//   node scripts/test-package.mjs --lang c        one
//   node scripts/test-package.mjs --keep          leave the scratch directory for a look
//
// Needs the npm registry (vitest, typescript). C needs clang for wasm32-wasi
// (skipped with a message when `toolhost doctor` says it is missing).

import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const keep = args.includes('--keep');
const langIndex = args.indexOf('--lang');
const langs = langIndex >= 0 ? [args[langIndex + 1]] : ['ts', 'c', 'js'];
const scratch = mkdtempSync(join(tmpdir(), 'toolhost-package-'));
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const npx = process.platform === 'win32' ? 'npx.cmd' : 'npx';
const started = Date.now();
let failures = 0;

function step(title, cmd, cmdArgs, cwd, check = () => undefined) {
  const t0 = Date.now();
  const run = spawnSync(cmd, cmdArgs, { cwd, encoding: 'utf8', env: { ...process.env, TOOLHOST_LOG: 'warn' }, maxBuffer: 64 << 20 });
  const seconds = ((Date.now() - t0) / 1000).toFixed(1);
  let problem = run.status === 0 ? undefined : `exit ${run.status}${run.signal ? ` (${run.signal})` : ''}`;
  if (!problem) {
    try {
      problem = check(run);
    } catch (error) {
      problem = error.message;
    }
  }
  if (problem) {
    failures += 1;
    console.log(`FAIL ${title} (${seconds} s): ${problem}\n--- stdout\n${run.stdout}\n--- stderr\n${run.stderr}`);
    return undefined;
  }
  console.log(`ok   ${title} (${seconds} s)`);
  return run;
}

// npm's own warnings that are not about this package (e.g. an unknown key in the user's npmrc).
const peerWarning = (text) => text.split('\n').filter((line) => /ERESOLVE|peer dep|conflicting peer/i.test(line));

console.log(`package test in ${scratch}`);
execFileSync(npm, ['pack', '--pack-destination', scratch], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
const tarball = join(scratch, readdirSync(scratch).find((name) => name.endsWith('.tgz')));

const app = join(scratch, 'app');
execFileSync('mkdir', ['-p', app]);
writeFileSync(join(app, 'package.json'), `${JSON.stringify({ name: 'app', private: true, type: 'module' }, null, 2)}\n`);
step('npm install <tarball> prints no peer-dependency conflict', npm, ['install', '--no-audit', '--no-fund', tarball], app, (run) => {
  const lines = peerWarning(run.stderr);
  return lines.length > 0 ? `peer-dependency warnings:\n${lines.join('\n')}` : undefined;
});

// The README's library example, verbatim: the first ```js block of "## The library".
const readme = readFileSync(join(root, 'README.md'), 'utf8');
const library = readme.slice(readme.indexOf('## The library'));
const example = library.slice(library.indexOf('```js\n') + 6, library.indexOf('\n```', library.indexOf('```js\n')));
writeFileSync(join(app, 'example.mjs'), `${example}\n`);
step('the README library example runs verbatim', 'node', ['example.mjs'], app, (run) => {
  if (!run.stdout.includes('{ sum: 3 }')) return 'no { sum: 3 } in its output';
  if (!/result \{/.test(run.stdout)) return 'word_count streamed no result';
  return undefined;
});
step('toolhost --version', npx, ['toolhost', '--version'], app, (run) => (/^\d+\.\d+\.\d+/.test(run.stdout) ? undefined : 'no version'));
const doctor = spawnSync(npx, ['toolhost', 'doctor', '--json'], { cwd: app, encoding: 'utf8' });
const report = JSON.parse(doctor.stdout);
console.log(`     doctor: ${report.checks.map((check) => `${check.name} ${check.ok ? 'ok' : 'MISSING'}`).join(', ')}`);
const hasC = report.checks.find((check) => check.name === 'c-toolchain')?.ok === true;
step('sourcemaps carry their sources', 'node', ['-e', `
  const fs = require('fs'); const path = require('path');
  const dir = ${JSON.stringify(join(app, 'node_modules', 'toolhost', 'dist'))};
  const walk = (d) => fs.readdirSync(d, { withFileTypes: true }).flatMap((e) => e.isDirectory() ? walk(path.join(d, e.name)) : [path.join(d, e.name)]);
  const bad = walk(dir).filter((f) => f.endsWith('.map')).filter((f) => { const m = JSON.parse(fs.readFileSync(f, 'utf8')); return !m.sourcesContent || m.sourcesContent.some((c) => c == null); });
  if (bad.length) { console.error(bad.slice(0, 5).join('\\n')); process.exit(1); }
`], app);

for (const lang of langs) {
  if (lang === 'c' && !hasC) {
    console.log('skip c: toolhost doctor says the C toolchain is missing');
    continue;
  }
  const name = `hello-${lang}`;
  const tool = name.replace(/-/g, '_');
  const dir = join(app, name);
  if (!step(`${lang}: toolhost init`, npx, ['toolhost', 'init', name, '--lang', lang], app)) continue;
  if (!step(`${lang}: npm install`, npm, ['install', '--no-audit', '--no-fund'], dir, (run) => {
    const lines = peerWarning(run.stderr);
    return lines.length > 0 ? `peer-dependency warnings:\n${lines.join('\n')}` : undefined;
  })) continue;
  if (!step(`${lang}: npm run build`, npm, ['run', 'build'], dir, (run) => (run.stdout.includes(`${tool} (streaming)`) ? undefined : 'the build did not list the tool'))) continue;
  step(`${lang}: npm test`, npm, ['test'], dir);
  step(`${lang}: toolhost call`, npx, ['toolhost', 'call', tool, '--load', `dist/${name}.wasm`, '--args', '{"name":"Ada","times":2}'], dir, (run) => {
    const result = JSON.parse(run.stdout);
    return result.total === 2 && result.greetings.length === 2 ? undefined : `unexpected result ${run.stdout}`;
  });
}

// A TypeScript tool reads its worktree through WASI (docs/authoring.md's example, verbatim in spirit), and is
// refused `..` and an absolute path: from init to call, through the CLI with a config's grant.
if (langs.includes('ts')) {
  const name = 'notes-ts';
  const dir = join(app, name);
  if (step('ts worktree: toolhost init', npx, ['toolhost', 'init', name, '--lang', 'ts'], app) && step('ts worktree: npm install', npm, ['install', '--no-audit', '--no-fund'], dir)) {
    // docs/authoring.md's worktree example is a 0.1.0 tool (defineComponent): say so in the init'd package.json (0.2.0).
    const manifestPath = join(dir, 'package.json');
    writeFileSync(manifestPath, JSON.stringify({ ...JSON.parse(readFileSync(manifestPath, 'utf8')), toolhost: { world: '0.1.0' } }, null, 2));
    writeFileSync(join(dir, 'src', 'index.ts'), `import { defineComponent, list, parseArgs, readText } from 'toolhost/guest';

export const tool = defineComponent('notes', [
  {
    name: 'read_note',
    description: 'Reads a note from the worktree.',
    inputSchema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
    streaming: false,
    idempotent: true,
    run(argsText) {
      const { path } = parseArgs<{ path: string }>(argsText);
      return { text: readText(path), siblings: list().map((entry) => entry.name) };
    },
  },
]);
`);
    const work = join(dir, 'work');
    execFileSync('mkdir', ['-p', work]);
    writeFileSync(join(work, 'note.txt'), 'a note\n');
    writeFileSync(join(dir, 'toolhost.yaml'), `tools:\n  - path: dist/${name}.wasm\n    grant: { privilege: DEFAULT }\n    default_policy: { privilege_level: DEFAULT }\n`);
    if (step('ts worktree: npm run build', npm, ['run', 'build'], dir)) {
      const call = (path) => ['toolhost', 'call', 'read_note', '--worktree', 'work', '--args', JSON.stringify({ path })];
      step('ts worktree: reads a file of its worktree', npx, call('note.txt'), dir, (run) => (JSON.parse(run.stdout).text === 'a note\n' ? undefined : `unexpected result ${run.stdout}`));
      for (const outside of ['../package.json', '/etc/passwd']) {
        const run = spawnSync(npx, call(outside), { cwd: dir, encoding: 'utf8', env: { ...process.env, TOOLHOST_LOG: 'error' } });
        const refused = run.status === 1 && /TOOL_ERROR/.test(run.stderr) && !run.stdout.includes('root:') && !run.stdout.includes('"name"');
        console.log(`${refused ? 'ok  ' : 'FAIL'} ts worktree: ${outside} is refused${refused ? '' : `\n--- stdout\n${run.stdout}\n--- stderr\n${run.stderr}`}`);
        if (!refused) failures += 1;
      }
      // The same through `toolhost serve` over MCP stdio, with the MCP SDK the package depends on.
      writeFileSync(join(dir, 'mcp-check.mjs'), `import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
const transport = new StdioClientTransport({ command: process.execPath, args: ['node_modules/toolhost/dist/host/cli/main.js', 'serve', '--mcp', 'stdio', '--worktree', 'work'], stderr: 'ignore' });
const client = new Client({ name: 'package-test', version: '1.0.0' });
await client.connect(transport);
const read = await client.callTool({ name: 'read_note', arguments: { path: 'note.txt' } });
const outside = await client.callTool({ name: 'read_note', arguments: { path: '../package.json' } });
const absolute = await client.callTool({ name: 'read_note', arguments: { path: '/etc/passwd' } });
await client.close();
console.log(JSON.stringify({ text: read.structuredContent?.text, outside: outside.isError === true, absolute: absolute.isError === true && !JSON.stringify(absolute).includes('root:') }));
`);
      step('ts worktree: the same through toolhost serve (MCP stdio)', 'node', ['mcp-check.mjs'], dir, (run) => {
        const seen = JSON.parse(run.stdout.trim().split('\n').at(-1));
        return seen.text === 'a note\n' && seen.outside && seen.absolute ? undefined : `unexpected ${run.stdout}`;
      });
    }
  }
}
// `toolhost dev` in the world the tool runs in (issue 41): the project's toolhost.yaml grants a read-only worktree
// and elicitation; an MCP client (the SDK the package depends on) reads a worktree file through the tool, answers
// its elicitation, sees a refused sample() as PERMISSION_DENIED, and sees a type error refused.
if (langs.includes('ts')) {
  const name = 'dev-ts';
  const dir = join(app, name);
  if (step('ts dev: toolhost init', npx, ['toolhost', 'init', name, '--lang', 'ts'], app) && step('ts dev: npm install', npm, ['install', '--no-audit', '--no-fund'], dir)) {
    writeFileSync(join(dir, 'src', 'index.ts'), `import { elicit, sample } from 'toolhost:tool/host@0.2.0';
import { parseArgs, readText } from 'toolhost/guest';
import { defineMcpComponent } from 'toolhost/guest/mcp';

export const tool = defineMcpComponent('${name}', [
  {
    name: 'read_note',
    description: 'Reads a note from the worktree and asks the user who reads it.',
    inputSchema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
    run(argsText: string) {
      const { path } = parseArgs<{ path: string }>(argsText);
      const asked = elicit('Who reads it?', JSON.stringify({ type: 'object', properties: { name: { type: 'string' } }, required: ['name'] }));
      return { text: readText(path), reader: asked.action === 'accept' ? String(JSON.parse(asked.content ?? '{}').name) : asked.action };
    },
  },
  {
    name: 'ask_model',
    description: 'Asks the model without a sampling grant, and does not catch the refusal.',
    inputSchema: { type: 'object' },
    run() {
      return { model: sample({ messages: [{ role: 'user', content: { tag: 'text', val: 'hi' } }], systemPrompt: undefined, maxTokens: 10, temperature: undefined, stopSequences: [], modelPreferences: undefined }).model };
    },
  },
]);
`);
    rmSync(join(dir, 'test'), { recursive: true, force: true });
    execFileSync('mkdir', ['-p', join(dir, 'work')]);
    writeFileSync(join(dir, 'work', 'note.txt'), 'a note\n');
    writeFileSync(join(dir, 'toolhost.yaml'), `tools:\n  - path: dist/${name}.wasm\n    grant: { privilege: DEFAULT, elicitation: { max_requests: 2 } }\n    default_policy: { privilege_level: DEFAULT }\n`);
    writeFileSync(join(dir, 'dev-check.mjs'), `import { readFileSync, writeFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
const transport = new StdioClientTransport({ command: process.execPath, args: ['node_modules/toolhost/dist/host/cli/main.js', 'dev', '.', '--mcp', 'stdio', '--worktree', 'work'], stderr: 'pipe' });
let stderr = '';
transport.stderr.on('data', (chunk) => (stderr += chunk));
const client = new Client({ name: 'package-dev', version: '1.0.0' }, { capabilities: { elicitation: { form: {} } } });
client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { name: 'Ada' } }));
await client.connect(transport, { timeout: 300000 });
const read = await client.callTool({ name: 'read_note', arguments: { path: 'note.txt' } });
const sampled = await client.callTool({ name: 'ask_model', arguments: {} });
writeFileSync('src/index.ts', readFileSync('src/index.ts', 'utf8') + "\\nexport const answer: number = 'forty-two';\\n");
const deadline = Date.now() + 120000;
while (!/rebuild failed/.test(stderr) && Date.now() < deadline) await new Promise((done) => setTimeout(done, 100));
const still = await client.callTool({ name: 'read_note', arguments: { path: 'note.txt' } });
await client.close();
console.log(JSON.stringify({ read: read.structuredContent, denied: sampled.isError === true && JSON.stringify(sampled).includes('PERMISSION_DENIED'), typeError: /error TS2322/.test(stderr), still: still.structuredContent }));
`);
    step('ts dev: an MCP client on toolhost dev: worktree, elicitation, PERMISSION_DENIED, a type error refused', 'node', ['dev-check.mjs'], dir, (run) => {
      const seen = JSON.parse(run.stdout.trim().split('\n').at(-1));
      const ok = seen.read?.text === 'a note\n' && seen.read?.reader === 'Ada' && seen.denied && seen.typeError && seen.still?.reader === 'Ada';
      return ok ? undefined : `unexpected ${run.stdout}`;
    });
  }
}
console.log(`${failures === 0 ? 'package test passed' : `package test: ${failures} step(s) failed`} in ${((Date.now() - started) / 1000).toFixed(0)} s`);
if (keep || failures > 0) console.log(`scratch directory kept: ${scratch}`);
else rmSync(scratch, { recursive: true, force: true });
process.exit(failures === 0 ? 0 : 1);
