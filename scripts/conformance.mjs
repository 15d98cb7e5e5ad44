#!/usr/bin/env node
// The official MCP conformance suite's server scenarios against `toolhost serve --config conformance.yaml`.
//
//   npm run conformance [-- --scenario NAME]     (after npm run build: dist/ and guest-tools/dist/conformance)
//
// 1. Installs @modelcontextprotocol/conformance at SUITE_VERSION (and tinyglobby) into
//    node_modules/.cache/toolhost-conformance/ with npm, once (the npm registry only).
// 2. Starts toolhost serve on a free port (MCP Streamable HTTP, 127.0.0.1), with conformance.yaml.
// 3. Runs `conformance server --url URL` (the active suite, every scenario, unless --scenario) on Node 20 through
//    scripts/conformance/node20-hooks.mjs: the suite's bundle imports fs.globSync (Node 22), used only by its
//    tier-check command; the hook resolves the suite's `fs` to node:fs plus tinyglobby's globSync. The suite's
//    checks run as published. Scenarios listed in scripts/conformance/expected-failures.yaml (each with the
//    reason) are the suite's own baseline mechanism (--expected-failures).
// 4. Exits with the suite's status; results in node_modules/.cache/toolhost-conformance/results/.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const SUITE_VERSION = '0.1.16';
const TINYGLOBBY_VERSION = '0.2.17';
const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dir = join(root, 'node_modules', '.cache', 'toolhost-conformance', SUITE_VERSION);
const suite = join(dir, 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js');
const args = process.argv.slice(2);

if (!existsSync(suite)) {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'toolhost-conformance', private: true }));
  console.log(`conformance: installing @modelcontextprotocol/conformance@${SUITE_VERSION} into ${dir}`);
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const installed = spawnSync(npm, ['install', '--prefix', dir, '--no-audit', '--no-fund', '--loglevel=error', `@modelcontextprotocol/conformance@${SUITE_VERSION}`, `tinyglobby@${TINYGLOBBY_VERSION}`], { stdio: 'inherit' });
  if (installed.status !== 0) process.exit(installed.status ?? 1);
}
const component = join(root, 'guest-tools', 'dist', 'conformance', 'conformance.wasm');
if (!existsSync(component)) {
  console.error(`conformance: ${component} is missing: run npm run build:guests first`);
  process.exit(1);
}

const server = spawn(process.execPath, [join(root, 'dist', 'host', 'cli', 'main.js'), 'serve', '--config', join(root, 'conformance.yaml'), '--port', '0'], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
const url = await new Promise((resolve, reject) => {
  let seen = '';
  server.stdout.on('data', (chunk) => {
    seen += chunk;
    const match = /MCP \(Streamable HTTP\): (\S+)/.exec(seen);
    if (match) resolve(match[1]);
  });
  server.on('exit', (code) => reject(new Error(`toolhost serve exited with ${code} before listening:\n${seen}`)));
});
console.log(`conformance: toolhost serves ${url}`);

const hooks = `data:text/javascript,${encodeURIComponent(`import { register } from 'node:module';
register(${JSON.stringify(pathToFileURL(join(root, 'scripts', 'conformance', 'node20-hooks.mjs')).href)}, { data: { shim: ${JSON.stringify(pathToFileURL(join(root, 'scripts', 'conformance', 'node20-fs.mjs')).href)} } });`)}`;
const expected = join(root, 'scripts', 'conformance', 'expected-failures.yaml');
const runArgs = ['--import', hooks, suite, 'server', '--url', url, '-o', join(dir, 'results'), ...(existsSync(expected) ? ['--expected-failures', expected] : []), ...args];
const run = spawn(process.execPath, runArgs, { cwd: root, stdio: 'inherit', env: { ...process.env, TOOLHOST_CONFORMANCE_DIR: dir } });
const status = await new Promise((resolve) => run.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0))));
server.kill('SIGTERM');
await new Promise((resolve) => server.on('exit', resolve));
process.exit(status);
