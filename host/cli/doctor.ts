/**
 * `toolhost doctor`: what this machine has for running and writing tools, what
 * is missing and the exact command to get it. Exit 1 when something a tool
 * author needs is missing (a C or JS guest toolchain, a supported Node).
 */
import { accessSync, constants, existsSync, readdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { packageRoot } from '../config/package-root.js';
import { C_TOOLCHAIN_INSTALL, JS_TOOLCHAIN_INSTALL, probeCToolchain, probeJsToolchain } from '../authoring/toolchain.js';
import { cSdkDir } from '../authoring/paths.js';
import { defaultCacheDir } from '../sandbox/load/component-cache.js';

export interface DoctorCheck {
  name: string;
  ok: boolean;
  /** What was found. */
  detail: string;
  /** How to fix it, when not ok. */
  fix?: string;
  /** Whether a failure makes `doctor` exit 1. */
  required: boolean;
}

const EXAMPLE_COMPONENTS = ['text', 'json', 'net', 'ctools', 'files'];

function nodeCheck(minimum: string): DoctorCheck {
  const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
  const [minMajor = 0, minMinor = 0] = minimum.split('.').map(Number);
  const ok = major > minMajor || (major === minMajor && minor >= minMinor);
  return { name: 'node', ok, detail: `Node ${process.versions.node} (needs ${minimum}+)`, ...(ok ? {} : { fix: `install Node ${minimum} or later (https://nodejs.org/)` }), required: true };
}

function writableDir(dir: string): boolean {
  let probe = dir;
  while (!existsSync(probe)) {
    const parent = join(probe, '..');
    if (parent === probe) return false;
    probe = parent;
  }
  try {
    accessSync(probe, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

export async function doctorChecks(): Promise<{ version: string; checks: DoctorCheck[] }> {
  const root = packageRoot();
  const manifest = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as { version: string; engines?: { node?: string } };
  const checks: DoctorCheck[] = [nodeCheck((manifest.engines?.node ?? '>=20.19').replace(/^>=\s*/, ''))];

  const c = probeCToolchain();
  checks.push(c.found
    ? { name: 'c-toolchain', ok: true, detail: `${c.found.clang} (${c.found.version})${c.found.sysrootArgs.length > 0 ? ` ${c.found.sysrootArgs.join(' ')}` : ''}; C SDK: ${cSdkDir()}/toolhost.h`, required: true }
    : { name: 'c-toolchain', ok: false, detail: `C guests cannot be built: ${c.problems.join('; ')}`, fix: C_TOOLCHAIN_INSTALL, required: true });

  const js = probeJsToolchain();
  checks.push(js.problems.length === 0
    ? { name: 'js-toolchain', ok: true, detail: `componentize-js ${js.componentizeJs}, rolldown ${js.rolldown}`, required: true }
    : { name: 'js-toolchain', ok: false, detail: `JS/TS guests cannot be built: ${js.problems.join('; ')}`, fix: JS_TOOLCHAIN_INSTALL, required: true });

  const cache = defaultCacheDir();
  const cacheOk = writableDir(cache);
  checks.push({
    name: 'cache',
    ok: cacheOk,
    detail: `transpile cache ${cache}${existsSync(cache) ? ` (${readdirSync(cache).length} entries)` : ' (created on first load)'}`,
    ...(cacheOk ? {} : { fix: `make ${cache} writable, or set TOOLHOST_CACHE_DIR to a writable directory` }),
    required: false,
  });

  const examples = join(root, 'guest-tools', 'dist');
  const built = EXAMPLE_COMPONENTS.filter((name) => existsSync(join(examples, `${name}.wasm`)));
  const missing = EXAMPLE_COMPONENTS.filter((name) => !built.includes(name));
  checks.push({
    name: 'example-tools',
    ok: missing.length === 0,
    detail: `${examples}: ${built.length > 0 ? `built: ${built.join(', ')}` : 'none built'}${missing.length > 0 ? `; missing: ${missing.join(', ')}` : ''}`,
    ...(missing.length === 0 ? {} : { fix: existsSync(join(root, 'scripts', 'build-guests.mjs')) ? `in ${root}: npm run build:guests (C tools need the C toolchain)` : 'reinstall toolhost (its package ships the built example tools)' }),
    required: false,
  });
  return { version: manifest.version, checks };
}

export async function doctor(options: { json?: boolean }): Promise<number> {
  const { version, checks } = await doctorChecks();
  const failed = checks.some((check) => check.required && !check.ok);
  if (options.json) {
    process.stdout.write(`${JSON.stringify({ version, ok: !failed, checks }, null, 2)}\n`);
  } else {
    process.stdout.write(`toolhost ${version} (${packageRoot()})\n`);
    for (const check of checks) {
      process.stdout.write(`${check.ok ? 'ok     ' : check.required ? 'MISSING' : 'warn   '} ${check.name}: ${check.detail}\n`);
      if (!check.ok && check.fix) process.stdout.write(`        fix: ${check.fix}\n`);
    }
  }
  return failed ? 1 : 0;
}
