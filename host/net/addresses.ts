/**
 * IP addresses: parsing (strict), canonical text, and what kind of destination
 * an address is. The egress checker judges every resolved address with these.
 *
 * - Parsing is strict: IPv4 in dotted decimal only (`127.1`, `0x7f.1` and
 *   `2130706433` are not addresses here; WHATWG URL parsing has already turned
 *   such host spellings into dotted decimal before the checker sees them), IPv6
 *   with optional brackets and a zone index (ignored).
 * - IPv4-mapped IPv6 addresses (`::ffff:a.b.c.d`) are the IPv4 address for
 *   every purpose: {@link unmapped} turns them into it.
 * - NAT64 (`64:ff9b::/96`) and 6to4 (`2002::/16`) addresses are classified by
 *   the IPv4 address they embed (but stay IPv6 for allowlist matching).
 */
import { isIPv4, isIPv6 } from 'node:net';
import { ToolhostError } from '../core/errors.js';

/** An IP address as a number: 32 bits for IPv4, 128 for IPv6. */
export interface IpAddress {
  readonly family: 4 | 6;
  readonly value: bigint;
}

/**
 * What kind of destination an address is. Everything but `public` is refused
 * under `EGRESS_UNRESTRICTED` unless allowlisted.
 *
 * - `loopback`: 127.0.0.0/8, ::1.
 * - `unspecified`: 0.0.0.0, :: (Linux connects them to the local host).
 * - `private`: 10/8, 172.16/12, 192.168/16, fc00::/7 (ULA), fec0::/10 (old site-local), 64:ff9b:1::/48 (local NAT64).
 * - `link-local`: 169.254/16, fe80::/10.
 * - `cgnat`: 100.64/10 (shared address space).
 * - `metadata`: cloud instance metadata endpoints: 169.254.169.254, 169.254.170.2 (AWS ECS),
 *   fd00:ec2::254 (AWS IPv6), 100.100.100.200 (Alibaba), 192.0.0.192 (Oracle), 168.63.129.16 (Azure wire server).
 * - `multicast`: 224/4, ff00::/8.
 * - `broadcast`: 255.255.255.255.
 * - `reserved`: the rest of the special-purpose registries: 0/8, 192.0.0/24, documentation
 *   (192.0.2/24, 198.51.100/24, 203.0.113/24, 2001:db8::/32, 3fff::/20), benchmarking (198.18/15),
 *   6to4 relay (192.88.99/24), 240/4, 2001::/23 (Teredo, ORCHID, …), and any IPv6 address
 *   outside the global unicast block 2000::/3.
 * - `public`: everything else.
 */
export type AddressClass =
  | 'loopback'
  | 'unspecified'
  | 'private'
  | 'link-local'
  | 'cgnat'
  | 'metadata'
  | 'multicast'
  | 'broadcast'
  | 'reserved'
  | 'public';

/**
 * Classify an IP address (see {@link AddressClass}). IPv4-mapped IPv6
 * addresses, NAT64 (`64:ff9b::/96`) and 6to4 (`2002::/16`) addresses are
 * classified by the IPv4 address they carry. A zone index (`fe80::1%eth0`) is
 * ignored.
 *
 * @throws ToolhostError `INVALID_INPUT` when `ip` is not an IP address.
 */
export function classifyAddress(ip: string): AddressClass {
  const parsed = parseAddress(ip);
  if (!parsed) throw new ToolhostError('INVALID_INPUT', `${JSON.stringify(ip)} is not an IP address`);
  return classifyIp(parsed);
}

/**
 * The canonical text of an IP address: IPv4 dotted decimal, IPv6 compressed
 * lower case (RFC 5952); an IPv4-mapped IPv6 address becomes its IPv4 address.
 * `undefined` when `ip` is not an IP address.
 */
export function canonicalAddress(ip: string): string | undefined {
  const parsed = parseAddress(ip);
  return parsed ? formatAddress(unmapped(parsed)) : undefined;
}

interface Range {
  family: 4 | 6;
  network: bigint;
  prefix: number;
  kind: AddressClass | 'embedded-v4';
}

function range(text: string, kind: Range['kind']): Range {
  const [address = '', prefix = ''] = text.split('/');
  const ip = parseAddress(address);
  if (!ip) throw new Error(`bad built-in range ${text}`);
  return { family: ip.family, network: ip.value, prefix: Number(prefix), kind };
}

// Most specific first: the first matching range wins.
const V4_RANGES: Range[] = [
  range('0.0.0.0/32', 'unspecified'),
  range('0.0.0.0/8', 'reserved'),
  range('10.0.0.0/8', 'private'),
  range('100.100.100.200/32', 'metadata'),
  range('100.64.0.0/10', 'cgnat'),
  range('127.0.0.0/8', 'loopback'),
  range('168.63.129.16/32', 'metadata'),
  range('169.254.169.254/32', 'metadata'),
  range('169.254.170.2/32', 'metadata'),
  range('169.254.0.0/16', 'link-local'),
  range('172.16.0.0/12', 'private'),
  range('192.0.0.192/32', 'metadata'),
  range('192.0.0.0/24', 'reserved'),
  range('192.0.2.0/24', 'reserved'),
  range('192.88.99.0/24', 'reserved'),
  range('192.168.0.0/16', 'private'),
  range('198.18.0.0/15', 'reserved'),
  range('198.51.100.0/24', 'reserved'),
  range('203.0.113.0/24', 'reserved'),
  range('224.0.0.0/4', 'multicast'),
  range('255.255.255.255/32', 'broadcast'),
  range('240.0.0.0/4', 'reserved'),
];

const V6_RANGES: Range[] = [
  range('::/128', 'unspecified'),
  range('::1/128', 'loopback'),
  range('::ffff:0:0/96', 'embedded-v4'),
  range('64:ff9b::/96', 'embedded-v4'),
  range('64:ff9b:1::/48', 'private'),
  range('fd00:ec2::254/128', 'metadata'),
  range('fc00::/7', 'private'),
  range('fe80::/10', 'link-local'),
  range('fec0::/10', 'private'),
  range('ff00::/8', 'multicast'),
  range('2001:db8::/32', 'reserved'),
  range('2001::/23', 'reserved'),
  range('2002::/16', 'embedded-v4'),
  range('3fff::/20', 'reserved'),
];

const GLOBAL_UNICAST = range('2000::/3', 'public');

/** The class of a parsed address (see {@link AddressClass}). */
export function classifyIp(ip: IpAddress): AddressClass {
  const ranges = ip.family === 4 ? V4_RANGES : V6_RANGES;
  for (const candidate of ranges) {
    if (!inNetwork(ip, { family: candidate.family, value: candidate.network }, candidate.prefix)) continue;
    if (candidate.kind !== 'embedded-v4') return candidate.kind;
    // 6to4 carries the IPv4 address in bits 16..47; the others in the last 32 bits.
    const embedded = candidate.prefix === 16 ? (ip.value >> 80n) & 0xffffffffn : ip.value & 0xffffffffn;
    return classifyIp({ family: 4, value: embedded });
  }
  if (ip.family === 6 && !inNetwork(ip, { family: 6, value: GLOBAL_UNICAST.network }, GLOBAL_UNICAST.prefix)) return 'reserved';
  return 'public';
}

/** Whether `ip` is in `network/prefix` (never across families). */
export function inNetwork(ip: IpAddress, network: IpAddress, prefix: number): boolean {
  if (ip.family !== network.family) return false;
  const mask = maskOf(ip.family, prefix);
  return (ip.value & mask) === (network.value & mask);
}

/** `ip` with its host bits (those past `prefix`) cleared. */
export function networkAddress(ip: IpAddress, prefix: number): IpAddress {
  return { family: ip.family, value: ip.value & maskOf(ip.family, prefix) };
}

/** Whether two addresses are the same (no unmapping: compare {@link unmapped} forms for that). */
export function sameAddress(a: IpAddress, b: IpAddress): boolean {
  return a.family === b.family && a.value === b.value;
}

function fullMask(family: 4 | 6): bigint {
  return family === 4 ? 0xffffffffn : (1n << 128n) - 1n;
}

function maskOf(family: 4 | 6, prefix: number): bigint {
  const bits = family === 4 ? 32 : 128;
  return (fullMask(family) >> BigInt(bits - prefix)) << BigInt(bits - prefix);
}

/** The IPv4 address of an IPv4-mapped IPv6 address; any other address unchanged. */
export function unmapped(ip: IpAddress): IpAddress {
  if (ip.family === 6 && ip.value >> 32n === 0xffffn) return { family: 4, value: ip.value & 0xffffffffn };
  return ip;
}

/** Parse a strict IPv4 (dotted decimal) or IPv6 address (brackets and a zone index allowed). */
export function parseAddress(text: string): IpAddress | undefined {
  let candidate = text;
  if (candidate.startsWith('[') && candidate.endsWith(']')) candidate = candidate.slice(1, -1);
  if (isIPv4(candidate)) {
    const value = candidate.split('.').reduce((sum, part) => (sum << 8n) | BigInt(Number(part)), 0n);
    return { family: 4, value };
  }
  const zone = candidate.indexOf('%');
  if (zone >= 0) candidate = candidate.slice(0, zone);
  if (!isIPv6(candidate)) return undefined;
  // A dotted IPv4 tail (::ffff:1.2.3.4) becomes two hex groups.
  const lastColon = candidate.lastIndexOf(':');
  const tail = candidate.slice(lastColon + 1);
  if (tail.includes('.')) {
    const v4 = parseAddress(tail);
    if (!v4 || v4.family !== 4) return undefined;
    candidate = `${candidate.slice(0, lastColon + 1)}${(v4.value >> 16n).toString(16)}:${(v4.value & 0xffffn).toString(16)}`;
  }
  const halves = candidate.split('::');
  const head = halves[0] ? halves[0].split(':') : [];
  const rest = halves.length > 1 && halves[1] ? halves[1].split(':') : [];
  const groups = halves.length > 1 ? [...head, ...Array<string>(8 - head.length - rest.length).fill('0'), ...rest] : head;
  if (groups.length !== 8) return undefined;
  const value = groups.reduce((sum, group) => (sum << 16n) | BigInt(Number.parseInt(group, 16)), 0n);
  return { family: 6, value };
}

/** The text of an address: IPv4 dotted decimal, IPv6 compressed lower case (RFC 5952). */
export function formatAddress(ip: IpAddress): string {
  if (ip.family === 4) {
    return [24n, 16n, 8n, 0n].map((shift) => ((ip.value >> shift) & 0xffn).toString()).join('.');
  }
  const groups: number[] = [];
  for (let index = 7; index >= 0; index--) groups.push(Number((ip.value >> BigInt(index * 16)) & 0xffffn));
  // RFC 5952: compress the longest run (length >= 2) of zero groups, the first one on a tie.
  let bestStart = -1;
  let bestLength = 0;
  for (let start = 0; start < 8; start++) {
    let length = 0;
    while (start + length < 8 && groups[start + length] === 0) length++;
    if (length > bestLength && length >= 2) {
      bestStart = start;
      bestLength = length;
    }
  }
  const hex = groups.map((group) => group.toString(16));
  if (bestStart < 0) return hex.join(':');
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLength).join(':')}`;
}
