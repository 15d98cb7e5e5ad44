#!/usr/bin/env node
// The official MCP conformance suite's server scenarios against `toolhost serve --config conformance.yaml`.
//
//   npm run conformance [-- --suite 0.1.16|0.2.0-alpha.12] [-- --scenario NAME] [-- --spec-version V]
//
// Default: the newest suite (0.2.0-alpha.12, a prerelease, pinned exactly) on both spec versions toolhost serves
// (2025-11-25 and 2026-07-28), one run each; `--suite 0.1.16` runs the previous stable line (2025-11-25 only, as
// before). `--spec-version V` runs one spec version.
//
// 1. Installs @modelcontextprotocol/conformance at the suite's version (and tinyglobby) into
//    node_modules/.cache/toolhost-conformance/<version>/ (or $TOOLHOST_CONFORMANCE_CACHE/<version>) with npm, once
//    (the npm registry only). Both versions stay pinned here, not in package.json: the suite is a tool run on
//    demand, not a dependency of the package.
// 2. Starts toolhost serve on a free port (MCP Streamable HTTP, 127.0.0.1), with conformance.yaml.
// 3. Runs `conformance server --url URL` (every scenario of the active suite for the spec version, unless
//    --scenario) on Node 20 through scripts/conformance/node20-hooks.mjs: the suite's bundle imports fs.globSync
//    (Node 22), used only by its tier-check command; the hook resolves the suite's `fs` to node:fs plus
//    tinyglobby's globSync. The suite's checks run as published. Scenarios listed in
//    scripts/conformance/expected-failures-<version>.yaml (each with the reason) are the suite's own baseline
//    mechanism (--expected-failures): what toolhost does not declare, and what another branch builds.
// 4. Exits non-zero when any run failed; results in <cache>/<version>/results/.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const SUITES = ['0.2.0-alpha.12', '0.1.16'];
const SPEC_VERSIONS = { '0.2.0-alpha.12': ['2025-11-25', '2026-07-28'], '0.1.16': [undefined] };
const TINYGLOBBY_VERSION = '0.2.17';
const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const argv = process.argv.slice(2);
const take = (flag) => {
  const at = argv.indexOf(flag);
  if (at < 0) return undefined;
  const [, value] = argv.splice(at, 2);
  return value;
};
const SUITE_VERSION = take('--suite') ?? SUITES[0];
if (!SUITES.includes(SUITE_VERSION)) {
  console.error(`conformance: --suite must be one of ${SUITES.join(', ')}`);
  process.exit(2);
}
const onlySpec = take('--spec-version');
const specVersions = onlySpec === undefined ? SPEC_VERSIONS[SUITE_VERSION] : [onlySpec];
const args = argv;
const cache = process.env.TOOLHOST_CONFORMANCE_CACHE ?? join(root, 'node_modules', '.cache', 'toolhost-conformance');
const dir = join(cache, SUITE_VERSION);
const suite = join(dir, 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js');

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
const expected = join(root, 'scripts', 'conformance', `expected-failures-${SUITE_VERSION}.yaml`);
let status = 0;
for (const spec of specVersions) {
  console.log(`conformance: suite ${SUITE_VERSION}${spec === undefined ? '' : `, spec version ${spec}`}`);
  // The newest suite: every scenario (`--suite all`: pending and draft too), the ones toolhost leaves out listed
  // with their reasons in the expected-failures file.
  const all = SUITE_VERSION === SUITES[0] && !args.includes('--scenario') ? ['--suite', 'all'] : [];
  const runArgs = ['--import', hooks, suite, 'server', '--url', url, '-o', join(dir, 'results', spec ?? 'default'), ...all, ...(spec === undefined ? [] : ['--spec-version', spec]), ...(existsSync(expected) ? ['--expected-failures', expected] : []), ...args];
  const run = spawn(process.execPath, runArgs, { cwd: root, stdio: 'inherit', env: { ...process.env, TOOLHOST_CONFORMANCE_DIR: dir } });
  const code = await new Promise((resolve) => run.on('exit', (exit, signal) => resolve(exit ?? (signal ? 1 : 0))));
  if (code !== 0) status = code;
}
server.kill('SIGTERM');
await new Promise((resolve) => server.on('exit', resolve));
process.exit(status);
