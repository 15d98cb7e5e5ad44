/**
 * The floor: a bare piscina round trip, in a pool configured like the host's
 * (same threads, one task per worker, the same queue bound). Every other row
 * is read against it.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import type { Subject } from './runner.js';

/** The compiled task next to this module, or (running from the TypeScript sources) the one in dist/. */
function floorWorker(): string {
  const compiled = fileURLToPath(new URL('./floor-worker.cjs', import.meta.url));
  if (existsSync(compiled)) return compiled;
  const built = fileURLToPath(new URL('../../dist/host/bench/floor-worker.cjs', import.meta.url));
  if (existsSync(built)) return built;
  throw new Error(`the floor's worker is not built (${compiled}): run npm run build:host`);
}

export interface Floor {
  subject: Subject;
  close(): Promise<void>;
}

export function startFloor(options: { threads: number; calls: number; payload: unknown }): Floor {
  const rssBefore = process.memoryUsage.rss();
  const pool = new Piscina({
    filename: floorWorker(),
    minThreads: options.threads,
    maxThreads: options.threads,
    maxQueue: options.threads * 64,
    concurrentTasksPerWorker: 1,
  });
  return {
    subject: {
      id: 'floor',
      label: 'floor: bare piscina round trip',
      kind: 'floor',
      calls: options.calls,
      threads: options.threads,
      rssBefore,
      call: async () => ({ ok: (await pool.run(options.payload)) !== undefined }),
    },
    close: () => pool.destroy(),
  };
}
