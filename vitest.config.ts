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
    // Four files at a time on two cores: much of a file's time is waiting (timers of budget and heartbeat
    // tests, sandbox processes, MCP servers and registries starting), and the third and fourth files fill
    // those gaps. Measured on the idle 2-core machine for the same ~80 s of CPU: two files 61 s wall,
    // three 46-48 s, four 43-46 s, five no better. Most files' sandboxes run one worker thread.
    maxWorkers: 4,
    // Test files in one worker share the host's modules instead of re-importing them (~0.5 s a file).
    isolate: false,
    // Transformed modules are kept on disk between runs (node_modules/.experimental-vitest-cache, keyed by each
    // file's content): a run after the first skips re-transforming ~400 TypeScript files and loads them
    // faster. Measured on the idle 2-core machine: ~85 s of CPU and 44-47 s wall without, 77-79 s and
    // 41-42 s with a warm cache (the first run, cold, ~44.6 s).
    experimental: { fsModuleCache: true },
    // Files that work at import start first instead of last (see test/sequencer.ts).
    sequence: { sequencer: ImportCostFirstSequencer },
    // Sandbox workers run the worker the global setup just built from these sources, instead of booting
    // tsx in every worker thread (~300 ms of CPU each; the suite starts hundreds of workers).
    env: { TOOLHOST_DEV_WORKER: fileURLToPath(new URL('./dist/host/sandbox/worker/bootstrap.cjs', import.meta.url)) },
  },
});
