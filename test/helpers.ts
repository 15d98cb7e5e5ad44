/** Shared paths and helpers for the tests. */
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRegistry, silentLogger, type RegistryOptions, type ToolEvent, type ToolRegistry } from '../host/index.js';
import { MemoryAuditLog } from '../host/policy/memory-audit-log.js';

export const root = fileURLToPath(new URL('..', import.meta.url));
export const examplesDir = join(root, 'guest-tools', 'dist');
export const fixturesDir = join(root, 'test', 'fixtures', 'dist');
export const example = (name: string): string => join(examplesDir, `${name}.wasm`);
export const fixture = (name: string): string => join(fixturesDir, `${name}.wasm`);

/** Whether the C guests were built (clang with wasm32-wasi was available). */
export const hasCGuests = existsSync(example('ctools')) && existsSync(fixture('counter'));

/**
 * The transpile cache every test shares, the CLI's included (see cli-runner):
 * content-addressed, so it stays valid across runs; the global setup warms it.
 */
export const sharedCacheDir = join(root, 'node_modules', '.cache', 'toolhost-test');

/** Both places guest code can run: tests of behaviour that must not depend on it run under each. */
export const CONTAINMENTS = ['thread', 'process'] as const;

export function freshCacheDir(): string {
  return mkdtempSync(join(tmpdir(), 'toolhost-cache-'));
}

export function makeRegistry(options: RegistryOptions = {}): ToolRegistry {
  return createRegistry({
    logger: silentLogger,
    audit: new MemoryAuditLog(),
    ...options,
    // One worker thread unless a test needs two: two test files run at once on two cores.
    sandbox: { cacheDir: sharedCacheDir, threads: 1, ...options.sandbox },
  });
}

export async function collect(events: AsyncIterable<ToolEvent>): Promise<ToolEvent[]> {
  const all: ToolEvent[] = [];
  for await (const event of events) all.push(event);
  return all;
}

/** The event types in order, e.g. ['start', 'progress', 'delta', 'result']. */
export const types = (events: ToolEvent[]): string[] => events.map((event) => event.type);

export function terminalCount(events: ToolEvent[]): number {
  return events.filter((event) => event.type === 'result' || event.type === 'error').length;
}
