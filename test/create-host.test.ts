/**
 * createHost takes a config either resolved (loadHostConfig) or as an object
 * of toolhost.yaml's shape, which is checked exactly as a file would be.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, createHost, loadHostConfig } from '../host/index.js';
import { example, hasCGuests, sharedCacheDir } from './helpers.js';

const ctoolsConfig = {
  host: { log_level: 'error' as const, pool: { threads: 1, cache_dir: sharedCacheDir } },
  tools: [{ path: example('ctools'), grant: { memory_mb: 16 } }],
};

describe.skipIf(!hasCGuests)('createHost', () => {
  it('builds a host from a config object and serves its tools', async () => {
    const host = await createHost(ctoolsConfig);
    try {
      expect(host.config.file).toBeUndefined();
      expect(host.registry.has('echo')).toBe(true);
      const result = await host.registry.execute('echo', { text: 'from an object' });
      expect(result.structuredContent).toEqual({ text: 'from an object' });
    } finally {
      await host.close();
    }
  });

  it('refuses a config object the schema refuses, with a position in the object and no host left running', async () => {
    const bad = { host: { pool: { threads: 'two' } } } as unknown as Parameters<typeof createHost>[0];
    const refusal = await createHost(bad).then(() => undefined, (error: unknown) => error);
    expect(refusal).toBeInstanceOf(ConfigError);
    expect((refusal as ConfigError).code).toBe('INVALID_INPUT');
    expect((refusal as ConfigError).message).toMatch(/^<config object>:\d+:\d+: .*threads/);
  });

  it('still takes a resolved config as loadHostConfig returns it', async () => {
    const loaded = await loadHostConfig();
    const host = await createHost({ ...loaded.config, tools: [], sandbox: { ...loaded.config.sandbox, cacheDir: sharedCacheDir, threads: 1 } });
    try {
      expect(host.registry.names()).toEqual([]);
    } finally {
      await host.close();
    }
  });
});
