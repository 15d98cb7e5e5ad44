import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import { ImportCostFirstSequencer } from './test/sequencer.js';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Several real `toolhost serve` processes on one Redis: `npm run test:fleet` (vitest.fleet.config.ts);
    // property-based fuzzing: `npm run test:fuzz` (vitest.fuzz.config.ts); the CLI in processes of its
    // own: `npm run test:e2e` (vitest.e2e.config.ts).
    exclude: ['test/fleet/**', 'test/fuzz/**', 'test/e2e/**', '**/node_modules/**'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 180_000,
    // Three files at a time on two cores: much of a file's time is waiting (timers of budget and backoff
    // tests, spawned CLI processes starting), and a third file fills those gaps (measured on 2 cores:
    // 45.7 s -> 39.3-41.3 s wall for the same ~78 s of CPU). Most files' sandboxes run one worker thread.
    maxWorkers: 3,
    // Test files in one worker share the host's modules instead of re-importing them (~0.5 s a file).
    isolate: false,
    // Files that work at import start first instead of last (see test/sequencer.ts).
    sequence: { sequencer: ImportCostFirstSequencer },
    // Sandbox workers run the worker the global setup just built from these sources, instead of booting
    // tsx in every worker thread (~300 ms of CPU each; the suite starts hundreds of workers).
    env: { TOOLHOST_DEV_WORKER: fileURLToPath(new URL('./dist/host/sandbox/worker/bootstrap.cjs', import.meta.url)) },
  },
});
