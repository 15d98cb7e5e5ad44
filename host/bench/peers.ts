/**
 * Peer runtimes measured in the same run: Extism JS (`@extism/extism`, a dev
 * dependency) running a tiny echo plugin built from guest-tools/extism/echo.c.
 * Two rows: `runInWorker` with one reused plugin per worker thread (calls go
 * to the least busy), and a new plugin for every call on the main thread.
 * When the package or the plugin is missing, the rows are skipped with a note.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { packageRoot } from '../config/package-root.js';
import type { Subject } from './runner.js';

/** The part of @extism/extism's API the peer rows use (the package is optional, so its types are too). */
interface ExtismPlugin {
  call(name: string, input: string): Promise<{ text(): string } | null>;
  close(): Promise<void>;
}
interface ExtismModule {
  createPlugin(manifest: { wasm: Array<{ data: Uint8Array }> }, options: { useWasi: boolean; runInWorker?: boolean }): Promise<ExtismPlugin>;
}

export const EXTISM_PACKAGE = '@extism/extism';

/**
 * Calls a new runInWorker plugin serves before a paired block measures it: its
 * worker thread has run the hot paths, and it has barely begun to slow down
 * (measured: p50 0.15-0.16 ms over its first 100 calls, 0.20-0.25 ms over the
 * next 200, 0.53 ms after 6,000).
 */
export const EXTISM_RENEW_WARM_UP_CALLS = 100;

export function extismPluginPath(): string {
  return join(packageRoot(), 'guest-tools', 'dist', 'peers', 'extism-echo.wasm');
}

export interface Peers {
  subjects: Subject[];
  /** Why rows were left out. */
  notes: string[];
  close(): Promise<void>;
}

async function importExtism(): Promise<{ module?: ExtismModule; version?: string; error?: string }> {
  try {
    // A variable specifier: the package is optional, so nothing may depend on it at compile time.
    const specifier: string = EXTISM_PACKAGE;
    const module = (await import(specifier)) as ExtismModule;
    let version: string | undefined;
    try {
      const manifest = join(packageRoot(), 'node_modules', '@extism', 'extism', 'package.json');
      version = (JSON.parse(await readFile(manifest, 'utf8')) as { version?: string }).version;
    } catch {
      version = undefined;
    }
    return { module, ...(version === undefined ? {} : { version }) };
  } catch (error) {
    return { error: error instanceof Error ? error.message.split('\n')[0]! : String(error) };
  }
}

/** The Extism rows, ready to run (their plugins are created now, outside the measured calls). */
export async function startPeers(options: { threads: number; calls: number; payload: unknown }): Promise<Peers> {
  const notes: string[] = [];
  const plugin = extismPluginPath();
  const extism = await importExtism();
  if (!extism.module) {
    notes.push(`Extism rows skipped: ${EXTISM_PACKAGE} is not installed (it is a dev dependency: npm install --save-dev ${EXTISM_PACKAGE}): ${extism.error ?? ''}`);
    return { subjects: [], notes, close: async () => {} };
  }
  if (!existsSync(plugin)) {
    notes.push(`Extism rows skipped: ${plugin} is missing (built by node scripts/build-guests.mjs; needs clang with the wasm32 target)`);
    return { subjects: [], notes, close: async () => {} };
  }
  const { createPlugin } = extism.module;
  const wasm = new Uint8Array(await readFile(plugin));
  const manifest = { wasm: [{ data: wasm }] };
  const input = JSON.stringify(options.payload);
  const version = extism.version === undefined ? '' : ` ${extism.version}`;

  // Node prints an ExperimentalWarning when Extism loads node:wasi; it says nothing about the measurement.
  const rssBefore = process.memoryUsage.rss();
  const startWorkers = (): Promise<ExtismPlugin[]> => Promise.all(Array.from({ length: options.threads }, () => createPlugin(manifest, { useWasi: false, runInWorker: true })));
  let workers = await startWorkers();
  // A plugin runs one call at a time ("plugin is not reentrant"): a call takes an idle one or waits its turn.
  let idle = [...workers];
  const waiting: Array<(plugin: ExtismPlugin) => void> = [];
  const acquire = (): Promise<ExtismPlugin> => {
    const plugin = idle.pop();
    return plugin ? Promise.resolve(plugin) : new Promise((resolve) => waiting.push(resolve));
  };
  const release = (plugin: ExtismPlugin): void => {
    const next = waiting.shift();
    if (next) next(plugin);
    else idle.push(plugin);
  };
  const inWorker: Subject = {
    id: 'extism:worker',
    label: `Extism JS${version} runInWorker (a reused plugin per worker)`,
    kind: 'peer',
    calls: options.calls,
    threads: options.threads,
    rssBefore,
    // One runInWorker plugin slows down as it serves calls (measured at concurrency 1: p50 0.25 ms after
    // ~2,800 calls, 2.9 ms after ~9,000). The paired phase, whose ratios the targets read, measures each
    // block on new plugins instead, warmed first, so the comparison is with Extism at its best.
    renew: async () => {
      await Promise.allSettled(workers.map((worker) => worker.close()));
      workers = await startWorkers();
      idle = [...workers];
    },
    renewWarmUpCalls: EXTISM_RENEW_WARM_UP_CALLS,
    call: async () => {
      const plugin = await acquire();
      try {
        const output = await plugin.call('echo', input);
        return { ok: output?.text() === input };
      } finally {
        release(plugin);
      }
    },
  };
  const perCall: Subject = {
    id: 'extism:per-call',
    label: `Extism JS${version}, a new plugin per call, in-process`,
    kind: 'peer',
    calls: options.calls,
    threads: 0,
    call: async () => {
      const fresh = await createPlugin(manifest, { useWasi: false });
      try {
        const output = await fresh.call('echo', input);
        return { ok: output?.text() === input };
      } finally {
        await fresh.close();
      }
    },
  };
  return {
    subjects: [inWorker, perCall],
    notes,
    close: async () => {
      await Promise.allSettled(workers.map((worker) => worker.close()));
    },
  };
}
