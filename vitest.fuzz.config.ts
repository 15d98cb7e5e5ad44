import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

/** `npm run test:fuzz`: property-based fuzzing of the host's edges (test/fuzz/). FUZZ_RUNS scales the cases. */
export default defineConfig({
  test: {
    include: ['test/fuzz/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 300_000,
    hookTimeout: 180_000,
    maxWorkers: 1,
    env: { TOOLHOST_DEV_WORKER: fileURLToPath(new URL('./dist/host/sandbox/worker/bootstrap.cjs', import.meta.url)) },
  },
});
