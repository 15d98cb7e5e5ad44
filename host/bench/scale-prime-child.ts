/**
 * The scale scenario's priming, run as its own process by scale.ts (so what
 * it allocates is not in the measured process's RSS):
 *
 *   node scale-prime-child.js CACHE_DIR|- FILE...
 *
 * loads every component once (transpiling those the cache lacks) and warms
 * it (its modules made for the default cap and kept in the cache), and prints
 * one JSON line: how many were transpiled.
 */
const [cacheDir, ...files] = process.argv.slice(2);
if (cacheDir === undefined || files.length === 0) {
  process.stderr.write('usage: scale-prime-child CACHE_DIR|- FILE...\n');
  process.exit(2);
}
const { createRegistry } = await import('../compose/registry.js');
const { silentLogger } = await import('../base/logger.js');
const registry = createRegistry({ logger: silentLogger, sandbox: { describeTimeoutMs: 120_000, ...(cacheDir === '-' ? {} : { cacheDir }) } });
try {
  const report = await registry.registerWasmTools(files);
  // Each component's modules made once for the default cap and kept beside its entry (variant-cache.ts), as a
  // host that served them before has them: the measured process reads them back.
  await registry.warm();
  // A warm cache is warm for the next start too: every file's id remembered, the young ones once they settle
  // (the entries the transpiles wrote were remembered as they were written).
  const { ComponentIds } = await import('../sandbox/load/component-ids.js');
  const { defaultCacheDir } = await import('../sandbox/load/cache-location.js');
  const ids = new ComponentIds(cacheDir === '-' ? defaultCacheDir() : cacheDir);
  for (const file of files) await ids.rememberWhenSettled(file);
  process.stdout.write(`${JSON.stringify({ transpiled: report.components.filter((c) => c.cache === 'miss').length })}\n`);
} finally {
  await registry.close();
}
