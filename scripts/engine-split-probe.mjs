// Issue 37, item 1: what splitting a componentize-js core module into a shared engine and a per-tool image
// would give, measured on real components (run: node --expose-gc scripts/engine-split-probe.mjs A.wasm B.wasm ...).
// For each component's largest core module: checks that every data segment is active, that there is no start
// function, and that the module with an empty data section (and data count 0) still validates (so no instruction
// names a data segment); then that the stripped modules are byte-identical across the components; then compares
// compiling each whole module with compiling the stripped one once (time, RSS), and instantiating (with inert
// imports) the whole module against the stripped one plus its segments written into its memory (time, and the
// memories compared byte for byte). Needs dist/ (npm run build:host).
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { moduleSections, ModuleReader } = await import(join(root, 'dist/host/sandbox/load/wasm-binary.js'));
const files = process.argv.slice(2);
if (files.length < 2) throw new Error('usage: engine-split-probe.mjs COMPONENT.wasm COMPONENT.wasm ...');
const sha = (bytes) => createHash('sha256').update(bytes).digest('hex').slice(0, 12);
const rss = () => process.memoryUsage.rss() / 1048576;
const settle = async () => { globalThis.gc?.(); await new Promise((r) => setTimeout(r, 200)); globalThis.gc?.(); return rss(); };

function split(module) {
  const sections = moduleSections(module);
  if (sections.some((s) => s.id === 8)) throw new Error('has a start function: not split');
  const data = sections.find((s) => s.id === 11);
  const reader = new ModuleReader(module, data.contentStart);
  const count = reader.leb();
  const segments = [];
  for (let i = 0; i < count; i += 1) {
    const flag = reader.leb();
    if (flag !== 0) throw new Error(`segment ${i} is not an active segment of memory 0 (flag ${flag}): not split`);
    if (reader.byte() !== 0x41) throw new Error('offset is not i32.const');
    const offset = reader.leb();
    if (reader.byte() !== 0x0b) throw new Error('offset expression longer than one constant');
    const length = reader.leb();
    segments.push({ offset, bytes: module.subarray(reader.offset, reader.offset + length) });
    reader.offset += length;
  }
  // The engine: the same module with no data segments (count 0) and a data count of 0.
  const parts = [];
  for (const s of sections) {
    if (s.id === 11) parts.push(Uint8Array.of(11, 1, 0));
    else if (s.id === 12) parts.push(Uint8Array.of(12, 1, 0));
    else if (s.id === 0) continue; // custom sections (names, producers) are not code
    else parts.push(module.subarray(s.start, s.end));
  }
  const engine = Buffer.concat([module.subarray(0, 8), ...parts]);
  // The image as snapshots keep memory: runs of non-zero 4 KiB pages, each one copy (segments applied in order).
  const end = Math.max(...segments.map((s) => s.offset + s.bytes.length));
  const flat = new Uint8Array(end);
  for (const segment of segments) flat.set(segment.bytes, segment.offset);
  const runs = [];
  for (let page = 0; page * 4096 < end; page += 1) {
    const from = page * 4096;
    const bytes = flat.subarray(from, Math.min(end, from + 4096));
    if (!bytes.some((x) => x !== 0)) continue;
    const last = runs.at(-1);
    if (last && last.offset + last.length === from) last.length += bytes.length;
    else runs.push({ offset: from, length: bytes.length });
  }
  const image = runs.map((run) => ({ offset: run.offset, bytes: flat.slice(run.offset, run.offset + run.length) }));
  return { engine, segments, image, imageBytes: segments.reduce((n, s) => n + s.bytes.length, 0), pageBytes: runs.reduce((n, r) => n + r.length, 0) };
}

function inertImports(module) {
  const imports = {};
  for (const entry of WebAssembly.Module.imports(module)) {
    imports[entry.module] ??= {};
    if (entry.kind === 'function') imports[entry.module][entry.name] = () => { throw new Error('inert'); };
    else throw new Error(`import of kind ${entry.kind}: not covered by this probe`);
  }
  return imports;
}

const memoryOf = (instance) => Object.values(instance.exports).find((value) => value instanceof WebAssembly.Memory);

const tools = files.map((file) => {
  const component = readFileSync(file);
  const modules = moduleSections(component).filter((s) => s.id === 1).map((s) => component.subarray(s.contentStart, s.end));
  const module = modules.sort((a, b) => b.length - a.length)[0];
  return { file, module, ...split(module) };
});
console.log(`engines (stripped modules): ${[...new Set(tools.map((t) => sha(t.engine)))].join(', ')} (${tools[0].engine.length} bytes); whole modules ${tools.map((t) => t.module.length).join(', ')} bytes; images ${tools.map((t) => `${t.segments.length} segments, ${t.imageBytes} bytes`).join('; ')}`);

let base = await settle();
let t0 = performance.now();
const whole = tools.map((t) => new WebAssembly.Module(t.module));
const wholeMs = performance.now() - t0;
const wholeRss = (await settle()) - base;
base = await settle();
t0 = performance.now();
const engines = new Map();
for (const t of tools) {
  const key = sha(t.engine);
  if (!engines.has(key)) engines.set(key, new WebAssembly.Module(t.engine));
}
const engineMs = performance.now() - t0;
const engineRss = (await settle()) - base;
base = await settle();
t0 = performance.now();
const separate = tools.map((t) => new WebAssembly.Module(t.engine));
const separateMs = performance.now() - t0;
const separateRss = (await settle()) - base;
console.log(`compile: the engine once per tool (${separate.length} modules of the same bytes: V8 shares their code) ${separateMs.toFixed(0)} ms, +${separateRss.toFixed(1)} MiB RSS`);
console.log(`compile: ${tools.length} whole modules ${wholeMs.toFixed(0)} ms, +${wholeRss.toFixed(1)} MiB RSS; ${engines.size} engine(s) ${engineMs.toFixed(0)} ms, +${engineRss.toFixed(1)} MiB RSS`);

for (const [i, t] of tools.entries()) {
  const imports = inertImports(whole[i]);
  t0 = performance.now();
  const a = new WebAssembly.Instance(whole[i], imports);
  const wholeInstMs = performance.now() - t0;
  t0 = performance.now();
  const b = new WebAssembly.Instance(engines.get(sha(t.engine)), imports);
  const memory = new Uint8Array(memoryOf(b).buffer);
  for (const segment of t.segments) memory.set(segment.bytes, segment.offset);
  const splitInstMs = performance.now() - t0;
  t0 = performance.now();
  const c = new WebAssembly.Instance(engines.get(sha(t.engine)), imports);
  const t1 = performance.now();
  const pages = new Uint8Array(memoryOf(c).buffer);
  for (const run of t.image) pages.set(run.bytes, run.offset);
  const applyMs = performance.now() - t1;
  const pageInstMs = performance.now() - t0;
  const same = Buffer.compare(Buffer.from(memoryOf(a).buffer), Buffer.from(memoryOf(b).buffer)) === 0 && Buffer.compare(Buffer.from(memoryOf(a).buffer), Buffer.from(memoryOf(c).buffer)) === 0;
  console.log(`${t.file.split('/').pop()}: instantiate whole ${wholeInstMs.toFixed(2)} ms; engine + segments ${splitInstMs.toFixed(2)} ms; engine + page image (${t.image.length} runs, ${t.pageBytes} bytes) ${pageInstMs.toFixed(2)} ms, of which the image ${applyMs.toFixed(2)} ms; memories identical: ${same}`);
}
