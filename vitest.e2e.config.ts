import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

/**
 * `npm run test:e2e`: the CLI as a user runs it, in processes of its own (toolhost call, serve, dev, bench, publish,
 * init, build, pull): slower than the rest (each spawns node, most build or serve), so kept out of `npm test`'s
 * inner loop; `.ci/run` runs both.
 */
export default defineConfig({
  test: {
    include: ['test/e2e/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 120_000,
    hookTimeout: 180_000,
    maxWorkers: 3,
    isolate: false,
    env: { TOOLHOST_DEV_WORKER: fileURLToPath(new URL('./dist/host/sandbox/worker/bootstrap.cjs', import.meta.url)) },
  },
});
