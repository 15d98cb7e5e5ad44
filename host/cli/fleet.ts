/**
 * `toolhost fleet`: the hosts of a fleet on Redis, their load and the calls
 * they run, read from the records every host renews in Redis (a host that
 * stopped renewing drops out after one lease).
 */
import { loadHostConfig } from '../compose/host.js';
import { silentLogger } from '../core/logger.js';
import { readFleet, RedisLink } from '../fleet/index.js';
import { UsageError } from './usage-error.js';

export interface FleetCommandOptions {
  redis?: string;
  config?: string;
  json?: boolean;
}

export async function fleet(options: FleetCommandOptions): Promise<number> {
  let url = options.redis;
  let prefix: string | undefined;
  if (url === undefined || options.config !== undefined) {
    const { config } = await loadHostConfig(options.config === undefined ? {} : { configPath: options.config });
    url ??= config.cluster?.redis;
    prefix = config.cluster?.keyPrefix;
  }
  if (url === undefined) throw new UsageError('no fleet: pass --redis URL, or a config with a cluster section');
  const link = new RedisLink({ url }, silentLogger);
  link.start();
  try {
    await link.ready(3000);
    const hosts = await readFleet(link, prefix);
    if (options.json) {
      process.stdout.write(`${JSON.stringify({ hosts }, null, 2)}\n`);
      return 0;
    }
    const running = hosts.reduce((sum, host) => sum + host.inFlight, 0);
    process.stdout.write(`${hosts.length} host${hosts.length === 1 ? '' : 's'}, ${running} call${running === 1 ? '' : 's'} running\n`);
    for (const host of hosts) {
      const servers = Object.entries((host.servers ?? {}) as Record<string, string>).map(([name, address]) => `${name} ${address}`).join(', ');
      process.stdout.write(`\n${host.hostId}  pid ${host.pid}  in flight ${host.inFlight}  heartbeat ${host.heartbeatAt}${servers ? `\n  ${servers}` : ''}\n`);
      for (const call of host.calls) {
        process.stdout.write(`  ${call.callId}  ${call.tool}${call.tenant === undefined ? '' : `  tenant ${call.tenant}`}  since ${call.startedAt}\n`);
      }
    }
    return 0;
  } finally {
    await link.close();
  }
}
