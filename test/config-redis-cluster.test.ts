/**
 * `cluster.redis_cluster` (issue 40): a fleet's store is one Redis or one Redis
 * Cluster, never both and never neither; `cluster.state.wait_replicas` reaches
 * the fleet; `--redis-cluster` on the command line is checked like `--redis`.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../host/config/index.js';
import { clusterNodes } from '../host/cli/redis-flags.js';

function config(text: string): string {
  const file = join(mkdtempSync(join(tmpdir(), 'toolhost-redis-cluster-config-')), 'toolhost.yaml');
  writeFileSync(file, `tools: []\n${text}`);
  return file;
}

describe('cluster.redis_cluster in toolhost.yaml', () => {
  it('resolves the seed nodes and wait_replicas', async () => {
    const { resolved } = await loadConfig(config('cluster:\n  redis_cluster:\n    nodes: [redis://10.0.0.1:7000, redis://10.0.0.2:7000]\n  state: { wait_replicas: 2 }\n'));
    expect(resolved.cluster).toEqual({ redisCluster: { nodes: ['redis://10.0.0.1:7000', 'redis://10.0.0.2:7000'] }, state: { waitReplicas: 2 } });
  });

  it('keeps a single Redis as before', async () => {
    const { resolved } = await loadConfig(config('cluster:\n  redis: redis://127.0.0.1:6379\n'));
    expect(resolved.cluster).toEqual({ redis: 'redis://127.0.0.1:6379' });
  });

  it('refuses both stores at once, and neither', async () => {
    await expect(loadConfig(config('cluster:\n  redis: redis://127.0.0.1:6379\n  redis_cluster: { nodes: [redis://127.0.0.1:7000] }\n'))).rejects.toThrow(/cluster/);
    await expect(loadConfig(config('cluster:\n  lease_ms: 1000\n'))).rejects.toThrow(/cluster/);
    await expect(loadConfig(config('cluster:\n  redis_cluster: { nodes: [] }\n'))).rejects.toThrow(/nodes/);
  });
});

describe('--redis-cluster on the command line', () => {
  it('takes redis:// URLs separated by commas, not beside --redis', () => {
    expect(clusterNodes({ redisCluster: 'redis://a:1, redis://b:2' })).toEqual(['redis://a:1', 'redis://b:2']);
    expect(clusterNodes({})).toBeUndefined();
    expect(() => clusterNodes({ redisCluster: 'a:1' })).toThrow(/redis:\/\//);
    expect(() => clusterNodes({ redisCluster: ',' })).toThrow(/at least one node/);
    expect(() => clusterNodes({ redis: 'redis://a:1', redisCluster: 'redis://b:2' })).toThrow(/mutually exclusive/);
  });
});
