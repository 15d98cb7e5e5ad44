/**
 * Caps on the TCP connections a server holds, so that no client, and no
 * flood of clients from many addresses, can exhaust the process's
 * descriptors (~20,000 idle sockets did) or the server's slots (20 loopback
 * addresses x 256 silent sockets held all 4,096 gRPC slots, issue 35 T11),
 * and an honest client is still served meanwhile.
 *
 * What it guarantees, for each connection at accept (before any byte is read):
 * - per client (its address; IPv4-mapped IPv6 as IPv4, other IPv6 by its /64:
 *   a single host commonly owns a whole /64): past `maxConnectionsPerClient`
 *   the new connection is closed at once (`client_connections_full`);
 * - per network (IPv4 /`networkPrefixV4`, default /24; IPv6
 *   /`networkPrefixV6`, default /48, since one client is already a /64): past
 *   `maxConnectionsPerNetwork`, the network's oldest connection that has not
 *   yet sent its first bytes is closed to make room (counted `reaped_silent`),
 *   and when it has none the new one is closed (`network_connections_full`);
 * - in total: at `maxConnections`, the oldest connection that has not sent its
 *   first bytes is closed to make room, else the one idle longest (no byte
 *   either way for at least `firstByteTimeoutMs`; counted `reaped_idle`), and
 *   when none is that idle the new one is closed (`connections_full`);
 * - a connection that has not sent its first bytes within `firstByteTimeoutMs`
 *   is closed (`first_byte_timeout`): a gRPC connection its 24-byte HTTP/2
 *   client preface (grpc-js's idle timeout never closes a socket that sent
 *   none), an HTTP connection one byte (Node's headers timeout does not start
 *   before a request does).
 * So a flood of silent sockets from any number of addresses holds a slot for
 * at most `firstByteTimeoutMs` and is the first thing closed when slots run
 * out; a client that sends its request first is served.
 *
 * What it does not do: tell a silent call (a long tool call with no frames)
 * from an idle connection once the server is full: such a connection may be
 * reaped after `firstByteTimeoutMs` of silence when nothing older is idle
 * (clients reconnect; the call ends CANCELLED). Activity is the socket's byte
 * counters, read at the first-byte deadline and whenever a reap looks for a
 * victim (a connection counts as idle from the last look that saw its counters
 * move, never earlier). Behind a proxy
 * every client shares the proxy's address and network: raise both caps there.
 * Nothing above TCP is bounded here (sessions, calls, bodies have their caps).
 */
import { readFileSync } from 'node:fs';
import type { Server as NetServer, Socket } from 'node:net';
import { formatAddress, networkAddress, parseAddress, unmapped } from '../net/addresses.js';

/** How many connections a server holds, and for how long a silent one. */
export interface ConnectionLimits {
  /** Connections open at once, over every client. */
  maxConnections: number;
  /** Connections one client (remote address; an IPv6 /64) may hold at once. */
  maxConnectionsPerClient: number;
  /** Connections one network (IPv4 /networkPrefixV4, IPv6 /networkPrefixV6) may hold at once. */
  maxConnectionsPerNetwork: number;
  /** The prefix length that makes an IPv4 network (8..32, default 24). */
  networkPrefixV4: number;
  /** The prefix length that makes an IPv6 network (16..128, default 48). */
  networkPrefixV6: number;
  /** A connection that has not sent its first bytes within this long, in ms, is closed (default 5000). */
  firstByteTimeoutMs: number;
}

/** The default total's ceiling; lower when the process may open few files (see {@link defaultMaxConnections}). */
export const DEFAULT_MAX_CONNECTIONS_CEILING = 4096;
export const DEFAULT_MAX_CONNECTIONS_PER_CLIENT = 256;
export const DEFAULT_MAX_CONNECTIONS_PER_NETWORK = 1024;
export const DEFAULT_NETWORK_PREFIX_V4 = 24;
export const DEFAULT_NETWORK_PREFIX_V6 = 48;
export const DEFAULT_FIRST_BYTE_TIMEOUT_MS = 5_000;

/** The bytes of the HTTP/2 client connection preface (RFC 9113 §3.4), what a gRPC connection sends first. */
export const HTTP2_PREFACE_BYTES = 24;

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
    maxConnectionsPerNetwork: limits.maxConnectionsPerNetwork ?? DEFAULT_MAX_CONNECTIONS_PER_NETWORK,
    networkPrefixV4: limits.networkPrefixV4 ?? DEFAULT_NETWORK_PREFIX_V4,
    networkPrefixV6: limits.networkPrefixV6 ?? DEFAULT_NETWORK_PREFIX_V6,
    firstByteTimeoutMs: limits.firstByteTimeoutMs ?? DEFAULT_FIRST_BYTE_TIMEOUT_MS,
  };
  for (const key of ['maxConnections', 'maxConnectionsPerClient', 'maxConnectionsPerNetwork', 'firstByteTimeoutMs'] as const) {
    if (!Number.isInteger(resolved[key]) || resolved[key] < 1) throw new TypeError(`${option}.${key} must be a positive integer`);
  }
  const prefixes = [['networkPrefixV4', 8, 32], ['networkPrefixV6', 16, 128]] as const;
  for (const [key, low, high] of prefixes) {
    if (!Number.isInteger(resolved[key]) || resolved[key] < low || resolved[key] > high) throw new TypeError(`${option}.${key} must be an integer from ${low} to ${high}`);
  }
  return resolved;
}

/** The limits `options` sets (undefined ones left out, for {@link resolveConnectionLimits}). */
export function definedLimits(options: { [K in keyof ConnectionLimits]?: number | undefined }): Partial<ConnectionLimits> {
  return Object.fromEntries(Object.entries(options).filter(([key, value]) => value !== undefined && key in LIMIT_KEYS)) as Partial<ConnectionLimits>;
}

const LIMIT_KEYS: Record<keyof ConnectionLimits, true> = {
  maxConnections: true,
  maxConnectionsPerClient: true,
  maxConnectionsPerNetwork: true,
  networkPrefixV4: true,
  networkPrefixV6: true,
  firstByteTimeoutMs: true,
};

/** Why a connection was refused (the `reason` of `toolhost_server_refused_total`). */
export type ConnectionRefusal = 'connections_full' | 'client_connections_full' | 'network_connections_full';

/** Why the gate closed a connection it had accepted (the `reason` of `toolhost_server_connections_closed_total`). */
export type ConnectionClosing = 'first_byte_timeout' | 'reaped_silent' | 'reaped_idle';

/** Where a gate reports. */
export interface GateReports {
  refused(reason: ConnectionRefusal): void;
  closed?(reason: ConnectionClosing): void;
}

export interface GateOptions {
  /**
   * Gets each connection that passes, which is how a front server hands sockets to another (gRPC); without it
   * the server's own `connection` listeners go on with it (the gate's listener runs first and destroys a refused socket).
   */
  accepted?: (socket: Socket) => void;
  /** How many bytes make a connection's first bytes (default 1; gRPC: {@link HTTP2_PREFACE_BYTES}). */
  firstBytes?: number;
}

/** What a gate reports. */
export interface ConnectionGate {
  /** Connections open through the gate. */
  readonly open: number;
  /** Connections the client (remote address as the socket reports it) holds. */
  heldBy(remoteAddress: string): number;
  /** Connections the client's network holds. */
  heldByNetwork(remoteAddress: string): number;
}

/** One connection the gate holds. */
interface Held {
  socket: Socket;
  client: string;
  network: string;
  /** Bytes both ways at the last look, and when they last changed (or the accept). */
  seen: number;
  activeAt: number;
  timer: NodeJS.Timeout;
  released: boolean;
}

/** Gate `server`'s connections: call before it listens. */
export function gateConnections(server: NetServer, limits: ConnectionLimits, reports: GateReports, options: GateOptions = {}): ConnectionGate {
  const firstBytes = options.firstBytes ?? 1;
  const held = new Set<Held>();
  const perClient = new Map<string, number>();
  const perNetwork = new Map<string, number>();
  const silent = (entry: Held): boolean => entry.socket.bytesRead < firstBytes;
  const count = (map: Map<string, number>, key: string, by: number): void => {
    const next = (map.get(key) ?? 0) + by;
    if (next <= 0) map.delete(key);
    else map.set(key, next);
  };
  const release = (entry: Held): void => {
    if (entry.released) return;
    entry.released = true;
    clearTimeout(entry.timer);
    held.delete(entry);
    count(perClient, entry.client, -1);
    count(perNetwork, entry.network, -1);
  };
  const close = (entry: Held, reason: ConnectionClosing): void => {
    release(entry);
    entry.socket.destroy();
    reports.closed?.(reason);
  };
  /** The oldest silent connection `where` allows (the set keeps accept order). */
  const oldestSilent = (where: (entry: Held) => boolean): Held | undefined => {
    for (const entry of held) if (where(entry) && silent(entry)) return entry;
    return undefined;
  };
  /** The connection idle longest, at least firstByteTimeoutMs; the counters are read now. */
  const longestIdle = (now: number): Held | undefined => {
    let victim: Held | undefined;
    for (const entry of held) {
      const bytes = entry.socket.bytesRead + entry.socket.bytesWritten;
      if (bytes !== entry.seen) {
        entry.seen = bytes;
        entry.activeAt = now;
      }
      if (now - entry.activeAt >= limits.firstByteTimeoutMs && (victim === undefined || entry.activeAt < victim.activeAt)) victim = entry;
    }
    return victim;
  };

  server.prependListener('connection', (socket: Socket) => {
    const { client, network } = keysOf(socket.remoteAddress, limits);
    const refuse = (reason: ConnectionRefusal): void => {
      reports.refused(reason);
      socket.destroy();
    };
    if ((perClient.get(client) ?? 0) >= limits.maxConnectionsPerClient) return refuse('client_connections_full');
    if ((perNetwork.get(network) ?? 0) >= limits.maxConnectionsPerNetwork) {
      const victim = oldestSilent((entry) => entry.network === network);
      if (victim === undefined) return refuse('network_connections_full');
      close(victim, 'reaped_silent');
    }
    if (held.size >= limits.maxConnections) {
      const victim = oldestSilent(() => true);
      if (victim !== undefined) close(victim, 'reaped_silent');
      else {
        const idle = longestIdle(Date.now());
        if (idle === undefined) return refuse('connections_full');
        close(idle, 'reaped_idle');
      }
    }
    const entry: Held = { socket, client, network, seen: 0, activeAt: Date.now(), released: false, timer: undefined as unknown as NodeJS.Timeout };
    entry.timer = setTimeout(() => {
      if (entry.released) return;
      if (silent(entry)) return close(entry, 'first_byte_timeout');
      // It spoke: a first look at its counters, so that it counts as idle from here if nothing moves.
      entry.seen = socket.bytesRead + socket.bytesWritten;
      entry.activeAt = Date.now();
    }, limits.firstByteTimeoutMs);
    entry.timer.unref();
    held.add(entry);
    count(perClient, client, 1);
    count(perNetwork, network, 1);
    socket.once('close', () => release(entry));
    options.accepted?.(socket);
  });
  return {
    get open() {
      return held.size;
    },
    heldBy: (remoteAddress) => perClient.get(clientOf(remoteAddress)) ?? 0,
    heldByNetwork: (remoteAddress) => perNetwork.get(keysOf(remoteAddress, limits).network) ?? 0,
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

/** The network a connection counts under: IPv4 /networkPrefixV4, IPv6 /networkPrefixV6 (IPv4-mapped as IPv4). */
export function networkOf(remoteAddress: string | undefined, prefixes: Pick<ConnectionLimits, 'networkPrefixV4' | 'networkPrefixV6'>): string {
  if (remoteAddress === undefined) return 'unknown';
  const parsed = parseAddress(remoteAddress);
  if (parsed === undefined) return remoteAddress;
  const address = unmapped(parsed);
  const prefix = address.family === 4 ? prefixes.networkPrefixV4 : prefixes.networkPrefixV6;
  return `${formatAddress(networkAddress(address, prefix))}/${prefix}`;
}

function keysOf(remoteAddress: string | undefined, limits: ConnectionLimits): { client: string; network: string } {
  return { client: clientOf(remoteAddress), network: networkOf(remoteAddress, limits) };
}
