/**
 * One cold start, run as its own process by cold-start.ts:
 *
 *   node cold-start-child.js COMPONENT TOOL ARGS_JSON
 *
 * imports the host, loads the component (transpile cache from
 * TOOLHOST_CACHE_DIR), makes one call and prints one JSON line: how long each
 * step took and whether the cache served the load.
 */
import { performance } from 'node:perf_hooks';

const [component, tool, argsJson] = process.argv.slice(2);
if (component === undefined || tool === undefined || argsJson === undefined) {
  process.stderr.write('usage: cold-start-child COMPONENT TOOL ARGS_JSON\n');
  process.exit(2);
}
const t0 = performance.now();
const { createRegistry } = await import('../compose/registry.js');
const { silentLogger } = await import('../base/logger.js');
const t1 = performance.now();
const registry = createRegistry({ logger: silentLogger, sandbox: { threads: 1 } });
try {
  const report = await registry.registerWasmTools(component);
  const t2 = performance.now();
  const result = await registry.execute(tool, JSON.parse(argsJson) as unknown);
  const t3 = performance.now();
  process.stdout.write(
    `${JSON.stringify({
      cache: report.components[0]?.cache ?? 'miss',
      importMs: t1 - t0,
      loadMs: t2 - t1,
      firstCallMs: t3 - t2,
      ok: !result.isError,
      ...(result.error ? { error: `${result.error.code}: ${result.error.message}` } : {}),
    })}\n`,
  );
} finally {
  await registry.close();
}
