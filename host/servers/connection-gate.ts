/**
 * Caps on the TCP connections a server holds, in total and per client, so
 * that no client can exhaust the process's descriptors (~20,000 idle sockets
 * did) and an honest client is still served while a hostile one holds its
 * per-client maximum.
 *
 * A connection past either cap is closed at once, before any byte is read
 * (the client sees a reset or an immediate close; nothing of the server's is
 * spent on it), and counted as a refusal (`connections_full`,
 * `client_connections_full`). A client is its remote address, IPv4-mapped
 * IPv6 addresses as IPv4 and other IPv6 addresses by their /64 (a single host
 * commonly owns a whole /64). Behind a proxy every client shares the proxy's
 * address: raise the per-client cap there.
 *
 * What it does not do: close idle connections (each server sets its own
 * timeouts: HTTP header and keep-alive timeouts, gRPC's idle timeout), or
 * bound anything above TCP (sessions, calls, bodies have their own caps).
 */
import { readFileSync } from 'node:fs';
import type { Server as NetServer, Socket } from 'node:net';
import { formatAddress, networkAddress, parseAddress, unmapped } from '../net/addresses.js';

/** How many connections a server holds. */
export interface ConnectionLimits {
  /** Connections open at once, over every client. */
  maxConnections: number;
  /** Connections one client (remote address; an IPv6 /64) may hold at once. */
  maxConnectionsPerClient: number;
}

/** The default total's ceiling; lower when the process may open few files (see {@link defaultMaxConnections}). */
export const DEFAULT_MAX_CONNECTIONS_CEILING = 4096;
export const DEFAULT_MAX_CONNECTIONS_PER_CLIENT = 256;

/**
 * The default total per server: 4096, or a quarter of the process's soft open-file limit when that is lower
 * (two servers then hold at most half of the descriptors, leaving the rest to the host). Linux only reads the limit.
 */
export function defaultMaxConnections(): number {
  try {
    const line = readFileSync('/proc/self/limits', 'utf8').split('\n').find((entry) => entry.startsWith('Max open files'));
    const soft = Number(line?.split(/\s{2,}/)[1]);
    if (Number.isInteger(soft) && soft > 0) return Math.max(1, Math.min(DEFAULT_MAX_CONNECTIONS_CEILING, Math.floor(soft / 4)));
  } catch {
    // Not Linux: the ceiling.
  }
  return DEFAULT_MAX_CONNECTIONS_CEILING;
}

/** Check user-given caps (messages name the options); returns them over the defaults. */
export function resolveConnectionLimits(limits: Partial<ConnectionLimits>, option = 'options'): ConnectionLimits {
  const resolved: ConnectionLimits = {
    maxConnections: limits.maxConnections ?? defaultMaxConnections(),
    maxConnectionsPerClient: limits.maxConnectionsPerClient ?? DEFAULT_MAX_CONNECTIONS_PER_CLIENT,
  };
  for (const key of ['maxConnections', 'maxConnectionsPerClient'] as const) {
    if (!Number.isInteger(resolved[key]) || resolved[key] < 1) throw new TypeError(`${option}.${key} must be a positive integer`);
  }
  return resolved;
}

/** Why a connection was refused (the `reason` of `toolhost_server_refused_total`). */
export type ConnectionRefusal = 'connections_full' | 'client_connections_full';

/** What a gate reports. */
export interface ConnectionGate {
  /** Connections open through the gate. */
  readonly open: number;
  /** Connections the client (remote address as the socket reports it) holds. */
  heldBy(remoteAddress: string): number;
}

/**
 * Gate `server`'s connections: call before it listens. `accepted` (when given) gets each connection that
 * passes, which is how a front server hands sockets to another (gRPC); without it the server's own
 * `connection` listeners go on with it (its listener here runs first and destroys a refused socket).
 */
export function gateConnections(server: NetServer, limits: ConnectionLimits, refused: (reason: ConnectionRefusal) => void, accepted?: (socket: Socket) => void): ConnectionGate {
  const perClient = new Map<string, number>();
  let open = 0;
  // Node closes connections past maxConnections itself, before emitting 'connection', and emits 'drop'.
  server.maxConnections = limits.maxConnections;
  server.on('drop', () => refused('connections_full'));
  server.prependListener('connection', (socket: Socket) => {
    const client = clientOf(socket.remoteAddress);
    const held = perClient.get(client) ?? 0;
    if (held >= limits.maxConnectionsPerClient) {
      refused('client_connections_full');
      socket.destroy();
      return;
    }
    perClient.set(client, held + 1);
    open += 1;
    socket.once('close', () => {
      open -= 1;
      const left = (perClient.get(client) ?? 1) - 1;
      if (left <= 0) perClient.delete(client);
      else perClient.set(client, left);
    });
    accepted?.(socket);
  });
  return {
    get open() {
      return open;
    },
    heldBy: (remoteAddress) => perClient.get(clientOf(remoteAddress)) ?? 0,
  };
}

/** The key a connection counts under: its address (IPv4-mapped as IPv4), an IPv6 address's /64. */
export function clientOf(remoteAddress: string | undefined): string {
  if (remoteAddress === undefined) return 'unknown';
  const parsed = parseAddress(remoteAddress);
  if (parsed === undefined) return remoteAddress;
  const address = unmapped(parsed);
  return address.family === 4 ? formatAddress(address) : `${formatAddress(networkAddress(address, 64))}/64`;
}
