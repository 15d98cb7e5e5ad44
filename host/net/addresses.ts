/**
 * IP addresses: parsing (strict), canonical text, and what kind of destination
 * an address is. The egress checker judges every resolved address with these.
 * Parsing, matching and formatting stand on ipaddr.js; the class table below
 * is ours (its ranges and their order are the policy).
 *
 * - Parsing is strict: IPv4 in dotted decimal only. ipaddr.js alone also reads
 *   `127.1`, `0x7f.1`, `2130706433` and octal `0177.0.0.1` as addresses, so
 *   node:net's `isIPv4`/`isIPv6` gate it. WHATWG URL parsing has already turned
 *   such host spellings into dotted decimal before the checker sees a URL's
 *   host; anywhere else (allowlist entries, resolver answers) an odd spelling
 *   is not an address.
 * - IPv6 may come in brackets and with a zone index (`fe80::1%eth0`), which is
 *   dropped.
 * - IPv4-mapped IPv6 addresses (`::ffff:a.b.c.d`) are the IPv4 address for
 *   every purpose: {@link unmapped} turns them into it.
 * - NAT64 (`64:ff9b::/96`) and 6to4 (`2002::/16`) addresses are classified by
 *   the IPv4 address they embed (but stay IPv6 for allowlist matching).
 */
import ipaddr from 'ipaddr.js';
import { isIPv4, isIPv6 } from 'node:net';
import { ToolhostError } from '../base/errors.js';

/** A parsed IP address (never a zone index; an IPv4-mapped IPv6 one until {@link unmapped}). */
export type IpAddress = { readonly family: 4; readonly ip: ipaddr.IPv4 } | { readonly family: 6; readonly ip: ipaddr.IPv6 };

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

type RangeKind = AddressClass | 'embedded-v4';

interface Range {
  network: IpAddress;
  prefix: number;
  kind: RangeKind;
}

function range(text: string, kind: RangeKind): Range {
  const [address = '', prefix = ''] = text.split('/');
  const network = parseAddress(address);
  if (!network) throw new Error(`bad built-in range ${text}`);
  return { network, prefix: Number(prefix), kind };
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
export function classifyIp(address: IpAddress): AddressClass {
  const ranges = address.family === 4 ? V4_RANGES : V6_RANGES;
  for (const candidate of ranges) {
    if (!inNetwork(address, candidate.network, candidate.prefix)) continue;
    if (candidate.kind !== 'embedded-v4') return candidate.kind;
    // 6to4 carries the IPv4 address in bytes 2..5 (bits 16..47); mapped and NAT64 in the last four.
    const bytes = address.ip.toByteArray();
    const embedded = candidate.prefix === 16 ? bytes.slice(2, 6) : bytes.slice(12, 16);
    return classifyIp({ family: 4, ip: new ipaddr.IPv4(embedded) });
  }
  if (address.family === 6 && !inNetwork(address, GLOBAL_UNICAST.network, GLOBAL_UNICAST.prefix)) return 'reserved';
  return 'public';
}

/** Whether `address` is in `network/prefix` (never across families). */
export function inNetwork(address: IpAddress, network: IpAddress, prefix: number): boolean {
  if (address.family === 4 && network.family === 4) return address.ip.match(network.ip, prefix);
  if (address.family === 6 && network.family === 6) return address.ip.match(network.ip, prefix);
  return false;
}

/** `address` with its host bits (those past `prefix`) cleared. */
export function networkAddress(address: IpAddress, prefix: number): IpAddress {
  const bytes = address.ip.toByteArray().map((byte, index) => {
    const kept = Math.max(0, Math.min(8, prefix - index * 8));
    return byte & (0xff00 >> kept) & 0xff;
  });
  const cleared = ipaddr.fromByteArray(bytes);
  return cleared instanceof ipaddr.IPv4 ? { family: 4, ip: cleared } : { family: 6, ip: cleared };
}

/** Whether two addresses are the same (no unmapping: compare {@link unmapped} forms for that). */
export function sameAddress(a: IpAddress, b: IpAddress): boolean {
  return inNetwork(a, b, a.family === 4 ? 32 : 128);
}

/** The IPv4 address of an IPv4-mapped IPv6 address; any other address unchanged. */
export function unmapped(address: IpAddress): IpAddress {
  if (address.family === 6 && address.ip.isIPv4MappedAddress()) return { family: 4, ip: address.ip.toIPv4Address() };
  return address;
}

/** Parse a strict IPv4 (dotted decimal) or IPv6 address (brackets and a zone index allowed). */
export function parseAddress(text: string): IpAddress | undefined {
  let candidate = text;
  if (candidate.startsWith('[') && candidate.endsWith(']')) candidate = candidate.slice(1, -1);
  if (isIPv4(candidate)) return { family: 4, ip: ipaddr.IPv4.parse(candidate) };
  const zone = candidate.indexOf('%');
  if (zone >= 0) candidate = candidate.slice(0, zone);
  if (!isIPv6(candidate)) return undefined;
  return { family: 6, ip: ipaddr.IPv6.parse(candidate) };
}

/** The text of an address: IPv4 dotted decimal, IPv6 compressed lower case (RFC 5952). */
export function formatAddress(address: IpAddress): string {
  return address.family === 4 ? address.ip.toString() : address.ip.toRFC5952String();
}
