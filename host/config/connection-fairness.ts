/**
 * A server's connection caps per network and its first-byte deadline, from
 * the file's snake_case keys over the defaults (servers/connection-gate.ts
 * enforces them and has the same defaults; config/ may not import servers/).
 */
import type { ConnectionFairness } from './resolved-types.js';

/** Per-network caps and the first-byte deadline of both servers (servers/connection-gate.ts has the same defaults). */
export const DEFAULT_CONNECTION_FAIRNESS = { maxConnectionsPerNetwork: 1024, networkPrefixV4: 24, networkPrefixV6: 48, firstByteTimeoutMs: 5_000 } as const;

/** A server's per-network cap, network prefixes and first-byte deadline, over the defaults. */
export function connectionFairness(server: { max_connections_per_network?: number; network_prefix_v4?: number; network_prefix_v6?: number; first_byte_timeout_ms?: number }): ConnectionFairness {
  return {
    maxConnectionsPerNetwork: server.max_connections_per_network ?? DEFAULT_CONNECTION_FAIRNESS.maxConnectionsPerNetwork,
    networkPrefixV4: server.network_prefix_v4 ?? DEFAULT_CONNECTION_FAIRNESS.networkPrefixV4,
    networkPrefixV6: server.network_prefix_v6 ?? DEFAULT_CONNECTION_FAIRNESS.networkPrefixV6,
    firstByteTimeoutMs: server.first_byte_timeout_ms ?? DEFAULT_CONNECTION_FAIRNESS.firstByteTimeoutMs,
  };
}

