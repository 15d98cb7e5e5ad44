/** The fleet's store on the command line: `--redis URL` or `--redis-cluster URL,URL` (serve, fleet). */
import { UsageError } from './usage-error.js';

export function checkRedisUrl(url: string): void {
  if (!/^rediss?:\/\/./.test(url)) throw new UsageError(`--redis must be a redis:// or rediss:// URL: ${url}`);
}

/** `--redis-cluster a,b,...`: the seed nodes, each a redis:// URL; not with `--redis`. */
export function clusterNodes(options: { redis?: string; redisCluster?: string }): string[] | undefined {
  if (options.redisCluster === undefined) return undefined;
  if (options.redis !== undefined) throw new UsageError('--redis and --redis-cluster are mutually exclusive: one Redis, or a Redis Cluster');
  const nodes = options.redisCluster.split(',').map((node) => node.trim()).filter((node) => node !== '');
  if (nodes.length === 0) throw new UsageError('--redis-cluster needs at least one node: redis://host:port[,redis://host:port...]');
  for (const node of nodes) {
    if (!/^rediss?:\/\/./.test(node)) throw new UsageError(`--redis-cluster takes redis:// or rediss:// URLs, separated by commas: ${node}`);
  }
  return nodes;
}
