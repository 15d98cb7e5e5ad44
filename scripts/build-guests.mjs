#!/usr/bin/env node
// Build the guest tool components from source.
//
//   node scripts/build-guests.mjs              the example tools → guest-tools/dist/ (and the
//                                              benchmark's Extism peer plugin → guest-tools/dist/peers/)
//   node scripts/build-guests.mjs --fixtures   the test fixtures → test/fixtures/dist/
//   node scripts/build-guests.mjs --force      rebuild even when up to date
//
// A component is rebuilt only when its inputs change (sources, the WIT world,
// the build scripts, the toolchain's package versions): each output has a
// `.stamp` file holding the hash of its inputs. C guests need clang with the
// wasm32-wasi target; without it they are skipped with a message saying how
// to enable them, and everything else still builds.
//
// The builders are the package's own (host/authoring/, as `toolhost build` uses
// them): run `tsc -p tsconfig.json` first (npm run build does).

import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildCComponent } from '../dist/host/authoring/c.js';
import { buildJsComponent } from '../dist/host/authoring/js.js';
import { probeCToolchain } from '../dist/host/authoring/toolchain.js';
import { buildExtismPlugin } from './guests/build-extism.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const witPath = join(root, 'wit', 'tool.wit');
const witV2Path = join(root, 'wit', 'v0.2', 'tool.wit');
const witV3Path = join(root, 'wit', 'v0.3', 'tool.wit');
const sdk = join(root, 'guest-tools', 'c', 'sdk');

const examples = {
  outDir: join(root, 'guest-tools', 'dist'),
  guests: [
    // text, json and net: the 0.2.0 world (titles, annotations; text and json an icon) through guest-tools/js-sdk/mcp.js.
    { name: 'text', kind: 'js', source: 'guest-tools/text/index.js', witPath: witV2Path },
    // The 0.2.0 world: titles, annotations and an icon (guest-tools/js-sdk/mcp.js).
    { name: 'json', kind: 'js', source: 'guest-tools/json/index.js', witPath: witV2Path },
    // fetch() needs componentize-js's `http` feature (wasi:http imports).
    { name: 'net', kind: 'js', source: 'guest-tools/net/index.js', disableFeatures: ['fetch-event'], witPath: witV2Path },
    // The 0.2.0 world through the C SDK (TOOLHOST_WORLD_0_2): titles, annotations and an icon.
    { name: 'ctools', kind: 'c', sources: ['guest-tools/c/ctools/ctools.c'], witPath: witV2Path },
    { name: 'files', kind: 'c', sources: ['guest-tools/c/files/files.c'] },
    // The 0.2.0 world's media content items: a PNG and a WAV generated from the arguments (C SDK).
    { name: 'media', kind: 'c', sources: ['guest-tools/c/media/media.c'], witPath: witV2Path },
    // The MCP conformance suite's tools, prompts and resources (0.3.0, world mcp-provider: `ask` for keyed rounds).
    // In a folder of its own, so loading guest-tools/dist as a directory of example tools never sees it; served by
    // conformance.yaml.
    { name: 'conformance/conformance', kind: 'js', source: 'guest-tools/conformance/index.js', witPath: witV3Path, world: 'mcp-provider' },
    // Not a component: the Extism plugin `toolhost bench` measures as a peer (its own folder, so loading
    // guest-tools/dist as a directory of components never sees it).
    { name: 'peers/extism-echo', kind: 'extism', sources: ['guest-tools/extism/echo.c'] },
  ],
};

const fixtures = {
  outDir: join(root, 'test', 'fixtures', 'dist'),
  guests: [
    // A JS fixture may carry a build.json with build options ({"disableFeatures": [...], "guardExceptions": false, "world": "0.2.0" | "0.3.0"}).
    ...listDirs('test/fixtures/guests/js').map((name) => ({ name, kind: 'js', source: `test/fixtures/guests/js/${name}/index.js`, ...buildOptions(`test/fixtures/guests/js/${name}/build.json`) })),
    ...listFiles('test/fixtures/guests/c', '.c').map((file) => ({ name: file.slice(0, -2), kind: 'c', sources: [`test/fixtures/guests/c/${file}`] })),
    // Guests of the 0.2.0 world, their canonical ABI written by hand (the C SDK speaks 0.1.0).
    ...listFiles('test/fixtures/guests/c-v0.2', '.c').map((file) => ({ name: file.slice(0, -2), kind: 'c', sources: [`test/fixtures/guests/c-v0.2/${file}`], witPath: witV2Path, withSdk: false })),
    // Guests of the 0.2.0 world written with the C SDK (TOOLHOST_WORLD_0_2).
    ...listFiles('test/fixtures/guests/c-v0.2-sdk', '.c').map((file) => ({ name: file.slice(0, -2), kind: 'c', sources: [`test/fixtures/guests/c-v0.2-sdk/${file}`], witPath: witV2Path })),
    // The same, of the world that also exports prompts and resources.
    ...listFiles('test/fixtures/guests/c-v0.2-mcp', '.c').map((file) => ({ name: file.slice(0, -2), kind: 'c', sources: [`test/fixtures/guests/c-v0.2-mcp/${file}`], witPath: witV2Path, world: 'mcp-provider', withSdk: false })),
  ],
};

function buildOptions(file) {
  const path = join(root, file);
  if (!existsSync(path)) return {};
  const { disableFeatures, guardExceptions, world } = JSON.parse(readFileSync(path, 'utf8'));
  const witPaths = { '0.2.0': witV2Path, '0.3.0': witV3Path };
  return { ...(Array.isArray(disableFeatures) ? { disableFeatures } : {}), ...(typeof guardExceptions === 'boolean' ? { guardExceptions } : {}), ...(witPaths[world] === undefined ? {} : { witPath: witPaths[world] }) };
}

function listDirs(dir) {
  const path = join(root, dir);
  if (!existsSync(path)) return [];
  return readdirSync(path, { withFileTypes: true }).filter((entry) => entry.isDirectory()).map((entry) => entry.name).sort();
}

function listFiles(dir, extension) {
  const path = join(root, dir);
  if (!existsSync(path)) return [];
  return readdirSync(path).filter((name) => name.endsWith(extension)).sort();
}

function packageVersion(name) {
  try {
    const path = join(root, 'node_modules', name, 'package.json');
    return JSON.parse(readFileSync(path, 'utf8')).version;
  } catch {
    return 'missing';
  }
}

/** The hash of everything a guest's output depends on. */
async function inputsHash(guest) {
  const hash = createHash('sha256');
  const files = [guest.witPath ?? witPath, fileURLToPath(import.meta.url)];
  if (guest.kind === 'js') {
    const sdkDir = join(root, 'guest-tools', 'js-sdk');
    const witDeps = join(root, 'wit', 'deps');
    files.push(join(root, guest.source), ...listFiles('guest-tools/js-sdk', '.js').map((name) => join(sdkDir, name)), join(root, 'host', 'authoring', 'js.ts'), join(root, 'host', 'authoring', 'wasi-world.ts'), ...listFiles('wit/deps', '.wit').map((name) => join(witDeps, name)));
    hash.update(`componentize-js@${packageVersion('@bytecodealliance/componentize-js')} rolldown@${packageVersion('rolldown')} ${JSON.stringify(guest.disableFeatures ?? null)} ${guest.guardExceptions ?? true}`);
  } else if (guest.kind === 'extism') {
    files.push(...guest.sources.map((source) => join(root, source)), join(root, 'scripts', 'guests', 'build-extism.mjs'));
  } else {
    files.push(...guest.sources.map((source) => join(root, source)), join(sdk, 'toolhost.c'), join(sdk, 'toolhost.h'), join(sdk, 'toolhost_v0_2.inc'), join(root, 'host', 'authoring', 'c.ts'));
    hash.update(`jco@${packageVersion('@bytecodealliance/jco')}`);
  }
  // The C compiler is an input too: setting CLANG (or WASI_SYSROOT) rebuilds the C guests with it.
  // (Unset, the hash is what it always was: no rebuild for the default compiler.)
  if (guest.kind !== 'js' && (process.env.CLANG || process.env.WASI_SYSROOT)) hash.update(`clang=${process.env.CLANG ?? ''} sysroot=${process.env.WASI_SYSROOT ?? ''}`);
  for (const file of files) {
    hash.update(relative(root, file));
    hash.update(await readFile(file));
  }
  return hash.digest('hex');
}

async function buildSet(set, { force }) {
  await mkdir(set.outDir, { recursive: true });
  // C guests and the Extism peer plugin need clang (with wasm32-wasi for the C guests).
  const clang = set.guests.some((guest) => guest.kind !== 'js') ? probeCToolchain().found?.clang : undefined;
  const skipped = [];
  for (const guest of set.guests) {
    const outFile = join(set.outDir, `${guest.name}.wasm`);
    const stampFile = `${outFile}.stamp`;
    const label = relative(root, outFile);
    if (guest.kind !== 'js' && !clang) {
      skipped.push(guest.name);
      continue;
    }
    const hash = await inputsHash(guest);
    if (!force && existsSync(outFile) && existsSync(stampFile) && (await readFile(stampFile, 'utf8')) === hash) {
      console.log(`guests: ${label} is up to date`);
      continue;
    }
    const started = Date.now();
    await mkdir(dirname(outFile), { recursive: true });
    if (guest.kind === 'extism') {
      await buildExtismPlugin({ clang, sources: guest.sources.map((source) => join(root, source)), outFile });
    } else if (guest.kind === 'js') {
      await buildJsComponent({
        source: join(root, guest.source),
        outFile,
        witPath: guest.witPath ?? witPath,
        ...(guest.world === undefined ? {} : { world: guest.world }),
        cwd: root,
        ...(guest.disableFeatures ? { disableFeatures: guest.disableFeatures } : {}),
        ...(guest.guardExceptions === undefined ? {} : { guardExceptions: guest.guardExceptions }),
      });
    } else {
      // buildCComponent compiles the SDK's toolhost.c into each C guest.
      await buildCComponent({ sources: guest.sources.map((source) => join(root, source)), outFile, witPath: guest.witPath ?? witPath, ...(guest.world === undefined ? {} : { world: guest.world }), ...(guest.withSdk === false ? { withSdk: false } : {}) });
    }
    await writeFile(stampFile, hash);
    console.log(`guests: built ${label} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  }
  if (skipped.length > 0) {
    console.warn(
      `guests: C tools NOT built (${skipped.join(', ')}): clang with the wasm32-wasi target was not found.\n` +
        '        To enable them: apt-get install -y clang lld wasi-libc libclang-rt-dev-wasm32, then npm run build:guests\n' +
        '        (or set CLANG and WASI_SYSROOT). Everything else works without them; their tests are skipped.',
    );
  }
}

const args = new Set(process.argv.slice(2));
const force = args.has('--force');
try {
  await buildSet(args.has('--fixtures') ? fixtures : examples, { force });
} catch (error) {
  console.error(`guests: build failed: ${error instanceof Error ? error.message : String(error)}`);
  if (error?.code === 'ERR_MODULE_NOT_FOUND' && String(error.message).includes('dist/host/authoring')) console.error('guests: compile the host first: npm run build:host');
  process.exit(1);
}
