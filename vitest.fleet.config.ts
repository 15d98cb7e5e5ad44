import { defineConfig } from 'vitest/config';

/** `npm run test:fleet`: real `toolhost serve` processes on one real redis-server, and on a real 6-node Redis Cluster (test/fleet/). */
export default defineConfig({
  test: {
    include: ['test/fleet/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 180_000,
    maxWorkers: 1,
  },
});
