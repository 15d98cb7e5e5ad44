/**
 * `toolhost fleet`: the hosts of a fleet on Redis, their load and the calls
 * they run, read from the records every host renews in Redis (a host that
 * stopped renewing drops out after one lease). A record that does not check
 * out (fleet/host-record.ts) is skipped with a warning on stderr naming the
 * host and why, and the rest are shown (exit 0). What records say is printed
 * with control characters escaped, so a record cannot drive the terminal.
 */
import { loadHostConfig } from '../compose/host.js';
import { silentLogger } from '../base/logger.js';
import { openRedisLink, readFleet } from '../fleet/index.js';
import { UsageError } from './usage-error.js';

export interface FleetCommandOptions {
  redis?: string;
  /** Seed nodes of a Redis Cluster (instead of `redis`). */
  redisCluster?: string[];
  config?: string;
  json?: boolean;
}

export async function fleet(options: FleetCommandOptions): Promise<number> {
  let url = options.redis;
  let nodes = options.redisCluster;
  let prefix: string | undefined;
  if ((url === undefined && nodes === undefined) || options.config !== undefined) {
    const { config } = await loadHostConfig(options.config === undefined ? {} : { configPath: options.config });
    if (url === undefined && nodes === undefined) {
      url = config.cluster?.redis;
      nodes = config.cluster?.redisCluster?.nodes;
    }
    prefix = config.cluster?.keyPrefix;
  }
  if (url === undefined && nodes === undefined) throw new UsageError('no fleet: pass --redis URL or --redis-cluster URLS, or a config with a cluster section');
  const link = openRedisLink(nodes === undefined ? { redis: url! } : { redisCluster: { nodes } }, silentLogger);
  link.start();
  try {
    await link.ready(3000);
    const hosts = await readFleet(link, prefix, (hostId, problem) => {
      process.stderr.write(`toolhost fleet: skipped the record of host ${JSON.stringify(hostId)}: ${problem}\n`);
    });
    if (options.json) {
      process.stdout.write(`${JSON.stringify({ hosts }, null, 2)}\n`);
      return 0;
    }
    const running = hosts.reduce((sum, host) => sum + host.inFlight, 0);
    process.stdout.write(`${hosts.length} host${hosts.length === 1 ? '' : 's'}, ${running} call${running === 1 ? '' : 's'} running\n`);
    for (const host of hosts) {
      const servers = Object.entries(host.servers ?? {}).map(([name, address]) => `${name} ${address}`).join(', ');
      process.stdout.write(printable(`\n${host.hostId}  pid ${host.pid}  in flight ${host.inFlight}  heartbeat ${host.heartbeatAt}${servers ? `\n  ${servers}` : ''}\n`));
      for (const call of host.calls) {
        const tenant = call.tenant === undefined ? '' : `  tenant ${call.tenant}${call.agent === undefined ? '' : ` (agent ${call.agent})`}`;
        process.stdout.write(printable(`  ${call.callId}  ${call.tool}${tenant}  since ${call.startedAt}\n`));
      }
    }
    return 0;
  } finally {
    await link.close();
  }
}

/** `text` with every control character but the newline escaped (`\u001b` and the like). */
function printable(text: string): string {
  return text.replace(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
