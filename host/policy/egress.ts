/**
 * The egress checker: may this call send a request to this URL, and to which
 * IP address exactly?
 *
 * The decision follows the call's `network_policy` label:
 *
 * - `DENY_ALL`: nothing is allowed (and no DNS query is made).
 * - `EGRESS_RESTRICTED`: only allowlisted destinations (see
 *   {@link parseEgressAllowlist}). A name that matches no host or `*.domain`
 *   entry is refused without a DNS query, unless the allowlist holds IP or CIDR
 *   entries, which are matched against the name's resolved addresses.
 * - `EGRESS_UNRESTRICTED`: public addresses only. Loopback, unspecified,
 *   private, link-local, CGNAT, cloud metadata, multicast, broadcast and
 *   reserved addresses (and IPv4-mapped IPv6 forms of them) are refused unless
 *   an allowlist entry matches.
 * - `FULL_ACCESS`: everything is allowed.
 *
 * Only `http:` and `https:` URLs are considered; other schemes are refused.
 *
 * Decisions are made on the **resolved** address, never on the name alone: a
 * name is resolved once (all addresses), each address is judged, and the
 * caller must connect to an address the decision approved (the pinned client
 * in `egress-http.ts` does), so a second lookup cannot rebind the name.
 *
 * Decisions worth knowing:
 * - A name resolving to several addresses: the denied ones are dropped and the
 *   allowed ones kept, in the resolver's order; the request is refused only if
 *   none is allowed. Dropping is as safe as refusing the whole name because the
 *   connection is pinned to an approved address.
 * - IPv4-mapped IPv6 addresses (`::ffff:a.b.c.d`) are the IPv4 address for
 *   every purpose (classification, allowlist matching, connecting): the
 *   decision reports the IPv4 form. NAT64 (`64:ff9b::/96`) and 6to4
 *   (`2002::/16`) addresses are classified by the IPv4 address they embed, but
 *   only an IPv6 entry matches them in the allowlist.
 * - Cloud metadata addresses are never reached through a host-name entry: only
 *   an IP or CIDR entry (or `FULL_ACCESS`) opens them, so allowlisting a name
 *   whose DNS an attacker controls cannot lead to credentials.
 * - Host-name entries match the name as written in the URL (lower-cased, one
 *   trailing dot ignored); they allow whatever that name resolves to (except
 *   metadata, above), which is how `localhost:8080` can be allowlisted.
 * - Under `EGRESS_RESTRICTED` a DNS query is itself traffic (a name can carry
 *   data to whoever serves its zone), so names are only resolved when an entry
 *   could allow them: a matching host entry, or any IP/CIDR entry at all.
 */
import { lookup } from 'node:dns/promises';
import { isIPv4, isIPv6 } from 'node:net';
import { domainToASCII } from 'node:url';
import { ToolhostError } from '../core/errors.js';
import type { NetworkLabel } from './labels.js';

// ---------------------------------------------------------------------------
// Allowlist entries

/**
 * A parsed allowlist entry. `source` keeps the entry as written, for messages
 * and the audit log. Addresses are in canonical form (IPv4 dotted decimal,
 * IPv6 compressed lower case; an IPv4-mapped IPv6 entry becomes IPv4).
 */
export type EgressRule =
  /** `host` or `host:port`: this exact name (case-insensitive); any port when `port` is absent. */
  | { kind: 'host'; host: string; port?: number; source: string }
  /** `*.domain` or `*.domain:port`: any name below `domain` (not `domain` itself). */
  | { kind: 'domain'; domain: string; port?: number; source: string }
  /** `1.2.3.4`, `1.2.3.4:port`, `fd00::1`, `[fd00::1]:port`: this resolved (or literal) address. */
  | { kind: 'address'; address: string; family: 4 | 6; port?: number; source: string }
  /** `10.0.0.0/8`, `fd00::/8`: any resolved (or literal) address in the network, any port. */
  | { kind: 'cidr'; network: string; prefix: number; family: 4 | 6; source: string };

/**
 * Parse allowlist entries (see {@link EgressRule} for the forms). Entries are
 * trimmed; host names are lower-cased and converted to ASCII (punycode).
 *
 * @throws ToolhostError `INVALID_INPUT` naming the first bad entry and why.
 */
export function parseEgressAllowlist(entries: readonly string[]): EgressRule[] {
  if (!Array.isArray(entries)) throw new ToolhostError('INVALID_INPUT', 'the egress allowlist must be a list of strings');
  return entries.map((entry) => {
    if (typeof entry !== 'string') {
      throw new ToolhostError('INVALID_INPUT', `invalid egress allowlist entry ${JSON.stringify(entry)}: not a string`);
    }
    try {
      return parseEntry(entry.trim(), entry);
    } catch (error) {
      if (error instanceof EntryError) {
        throw new ToolhostError('INVALID_INPUT', `invalid egress allowlist entry ${JSON.stringify(entry)}: ${error.message}`, { details: { entry } });
      }
      throw error;
    }
  });
}

class EntryError extends Error {}

function parseEntry(text: string, source: string): EgressRule {
  if (text === '') throw new EntryError('empty');
  if (text.includes('://')) throw new EntryError('write a host, host:port, IP or CIDR, not a URL');
  if (/\s/.test(text)) throw new EntryError('contains whitespace');

  if (text.includes('/')) {
    const slash = text.indexOf('/');
    const addressText = text.slice(0, slash);
    const prefixText = text.slice(slash + 1);
    const ip = parseIp(addressText);
    if (!ip) throw new EntryError(`${JSON.stringify(addressText)} is not an IP address (a CIDR is address/prefix)`);
    const max = ip.family === 4 ? 32 : 128;
    if (!/^\d{1,3}$/.test(prefixText) || Number(prefixText) > max) throw new EntryError(`the prefix length must be 0 to ${max}`);
    let prefix = Number(prefixText);
    let network = ip;
    // ::ffff:a.b.c.d/n with n >= 96 is an IPv4 network (mapped addresses are IPv4 here).
    if (ip.family === 6 && prefix >= 96 && (ip.value >> 32n) === 0xffffn) {
      network = { family: 4, value: ip.value & 0xffffffffn };
      prefix -= 96;
    }
    if ((network.value & ~maskOf(network.family, prefix) & fullMask(network.family)) !== 0n) {
      throw new EntryError(`host bits are set; did you mean ${formatIp({ family: network.family, value: network.value & maskOf(network.family, prefix) })}/${prefix}?`);
    }
    return { kind: 'cidr', network: formatIp(network), prefix, family: network.family, source };
  }

  if (text.startsWith('[')) {
    const close = text.indexOf(']');
    if (close < 0) throw new EntryError('unclosed "["');
    const inner = text.slice(1, close);
    const ip = isIPv6(inner) ? parseIp(inner) : undefined;
    if (!ip) throw new EntryError(`${JSON.stringify(inner)} is not an IPv6 address`);
    const rest = text.slice(close + 1);
    const port = rest === '' ? undefined : rest.startsWith(':') ? parsePort(rest.slice(1)) : badEntry('expected ":port" after "]"');
    return addressRule(ip, port, source);
  }

  // A bare IPv6 address (no port: use [v6]:port for one).
  if ((text.match(/:/g) ?? []).length > 1) {
    const ip = isIPv6(text) ? parseIp(text) : undefined;
    if (!ip) throw new EntryError('not an IPv6 address (write [address]:port to give a port)');
    return addressRule(ip, undefined, source);
  }

  let hostText = text;
  let port: number | undefined;
  const colon = text.indexOf(':');
  if (colon >= 0) {
    hostText = text.slice(0, colon);
    port = parsePort(text.slice(colon + 1));
  }
  if (hostText === '') throw new EntryError('no host before the port');

  if (isIPv4(hostText)) return addressRule(parseIp(hostText)!, port, source);

  if (hostText.startsWith('*.')) {
    const domain = parseHostName(hostText.slice(2));
    return port === undefined ? { kind: 'domain', domain, source } : { kind: 'domain', domain, port, source };
  }
  if (hostText.includes('*')) throw new EntryError('a wildcard is only allowed as a leading "*." (e.g. *.example.com)');
  const host = parseHostName(hostText);
  return port === undefined ? { kind: 'host', host, source } : { kind: 'host', host, port, source };
}

function badEntry(message: string): never {
  throw new EntryError(message);
}

function addressRule(ip: ParsedIp, port: number | undefined, source: string): EgressRule {
  const canonical = unmap(ip);
  const rule: EgressRule = { kind: 'address', address: formatIp(canonical), family: canonical.family, source };
  if (port !== undefined) rule.port = port;
  return rule;
}

function parsePort(text: string): number {
  if (!/^\d{1,5}$/.test(text)) throw new EntryError(`${JSON.stringify(text)} is not a port`);
  const port = Number(text);
  if (port < 1 || port > 65535) throw new EntryError(`port ${port} is out of range (1-65535)`);
  return port;
}

/** Lower-case ASCII form of a host name, or an {@link EntryError}. */
function parseHostName(text: string): string {
  const trimmed = text.endsWith('.') ? text.slice(0, -1) : text;
  // URL parsing treats a name whose last label is numeric as an IPv4 address.
  if (/(?:^|\.)(?:\d+|0x[0-9a-f]*)$/i.test(trimmed)) {
    throw new EntryError(`${JSON.stringify(text)} is neither a valid IPv4 address nor a host name`);
  }
  const ascii = trimmed === '' ? '' : domainToASCII(trimmed);
  if (ascii === '') throw new EntryError(`${JSON.stringify(text)} is not a valid host name`);
  if (ascii.length > 253) throw new EntryError('the host name is longer than 253 characters');
  const labels = ascii.split('.');
  for (const label of labels) {
    if (!/^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/.test(label)) {
      throw new EntryError(`${JSON.stringify(text)} is not a valid host name`);
    }
  }
  return ascii;
}

// ---------------------------------------------------------------------------
// Addresses

/** An IP address as a number: 32 bits for IPv4, 128 for IPv6. */
interface ParsedIp {
  family: 4 | 6;
  value: bigint;
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
  const parsed = parseIp(ip);
  if (!parsed) throw new ToolhostError('INVALID_INPUT', `${JSON.stringify(ip)} is not an IP address`);
  return classify(parsed);
}

/**
 * The canonical text of an IP address: IPv4 dotted decimal, IPv6 compressed
 * lower case (RFC 5952); an IPv4-mapped IPv6 address becomes its IPv4 address.
 * `undefined` when `ip` is not an IP address.
 */
export function canonicalAddress(ip: string): string | undefined {
  const parsed = parseIp(ip);
  return parsed ? formatIp(unmap(parsed)) : undefined;
}

interface Range {
  family: 4 | 6;
  network: bigint;
  prefix: number;
  kind: AddressClass | 'embedded-v4';
}

function range(text: string, kind: Range['kind']): Range {
  const [address = '', prefix = ''] = text.split('/');
  const ip = parseIp(address);
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

function classify(ip: ParsedIp): AddressClass {
  const ranges = ip.family === 4 ? V4_RANGES : V6_RANGES;
  for (const candidate of ranges) {
    if (!inRange(ip, candidate)) continue;
    if (candidate.kind !== 'embedded-v4') return candidate.kind;
    // 6to4 carries the IPv4 address in bits 16..47; the others in the last 32 bits.
    const embedded = candidate.prefix === 16 ? (ip.value >> 80n) & 0xffffffffn : ip.value & 0xffffffffn;
    return classify({ family: 4, value: embedded });
  }
  if (ip.family === 6 && !inRange(ip, GLOBAL_UNICAST)) return 'reserved';
  return 'public';
}

function inRange(ip: ParsedIp, candidate: { family: 4 | 6; network: bigint; prefix: number }): boolean {
  if (ip.family !== candidate.family) return false;
  const mask = maskOf(ip.family, candidate.prefix);
  return (ip.value & mask) === (candidate.network & mask);
}

function fullMask(family: 4 | 6): bigint {
  return family === 4 ? 0xffffffffn : (1n << 128n) - 1n;
}

function maskOf(family: 4 | 6, prefix: number): bigint {
  const bits = family === 4 ? 32 : 128;
  return (fullMask(family) >> BigInt(bits - prefix)) << BigInt(bits - prefix);
}

/** The IPv4 address of an IPv4-mapped IPv6 address; any other address unchanged. */
function unmap(ip: ParsedIp): ParsedIp {
  if (ip.family === 6 && ip.value >> 32n === 0xffffn) return { family: 4, value: ip.value & 0xffffffffn };
  return ip;
}

/** Parse a strict IPv4 (dotted decimal) or IPv6 address (brackets and a zone index allowed). */
function parseIp(text: string): ParsedIp | undefined {
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
    const v4 = parseIp(tail);
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

function formatIp(ip: ParsedIp): string {
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

// ---------------------------------------------------------------------------
// The checker

/** What the checker enforces: the call's network label and the tool's allowlist. */
export interface EgressPolicy {
  label: NetworkLabel;
  allow: EgressRule[];
}

/** One resolved address. */
export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a host name to all its addresses (the default uses `dns.lookup` with `all: true`). */
export type EgressResolver = (host: string) => Promise<ResolvedAddress[]>;

/** Options of an {@link EgressChecker}. */
export interface EgressCheckerOptions {
  /** The resolver (tests inject one; the default is `dns.promises.lookup(host, { all: true })`). */
  resolve?: EgressResolver;
  /** How long a lookup may take before the decision is a DNS timeout (default 10 000 ms). */
  dnsTimeoutMs?: number;
}

/**
 * Why a request may not go ahead.
 * - `invalid-url`: the URL does not parse or has no host.
 * - `scheme`: not `http:` or `https:`.
 * - `label`: the label is `DENY_ALL`.
 * - `not-allowlisted`: `EGRESS_RESTRICTED` and no entry matches the name, port or addresses.
 * - `prohibited-address`: every address the destination has is one the policy refuses
 *   (non-public under `EGRESS_UNRESTRICTED`, metadata reached through a name entry).
 * - `dns-failure` / `dns-timeout`: the name could not be resolved (not a policy refusal).
 */
export type EgressDenialCause = 'invalid-url' | 'scheme' | 'label' | 'not-allowlisted' | 'prohibited-address' | 'dns-failure' | 'dns-timeout';

/** The request may go ahead: connect to `address` (or, failing that, the next of `addresses`). */
export interface EgressAllowed {
  allowed: true;
  /** The URL's host: a lower-cased name, or an IP address without brackets. */
  host: string;
  /** The effective port (80 or 443 when the URL has none). */
  port: number;
  /** The first approved address: the one to connect to. */
  address: string;
  family: 4 | 6;
  /** Every approved address, in the resolver's order (`address` first); never empty. */
  addresses: ResolvedAddress[];
  /** The allowlist entry (as written) that allowed `address`, when one did. */
  rule?: string;
}

/** The request may not go ahead. */
export interface EgressDenied {
  allowed: false;
  host: string;
  /** The effective port, when the URL parsed (0 otherwise). */
  port: number;
  /** The (first) refused address, when the refusal was about an address. */
  address?: string;
  cause: EgressDenialCause;
  /** A sentence for logs and error messages. */
  reason: string;
  /** The resolver's error code (e.g. `ENOTFOUND`) for `dns-failure`. */
  dnsCode?: string;
}

/** The checker's answer for one URL. */
export type EgressDecision = EgressAllowed | EgressDenied;

/** The name-level facts about a destination, input to {@link EgressChecker.decide}. */
export interface EgressTarget {
  /** Lower-cased host name, or an IP address (no brackets). */
  host: string;
  port: number;
}

/** The default time a DNS lookup may take. */
export const DEFAULT_DNS_TIMEOUT_MS = 10_000;

const defaultResolve: EgressResolver = async (host) => {
  const found = await lookup(host, { all: true });
  return found.map(({ address, family }) => ({ address, family: family === 6 ? 6 : 4 }));
};

interface CompiledRule {
  rule: EgressRule;
  name?: (host: string, port: number) => boolean;
  address?: (ip: ParsedIp, port: number) => boolean;
}

function compile(rule: EgressRule): CompiledRule {
  const portOk = (port: number): boolean => rule.kind === 'cidr' || rule.port === undefined || rule.port === port;
  switch (rule.kind) {
    case 'host':
      return { rule, name: (host, port) => host === rule.host && portOk(port) };
    case 'domain':
      return { rule, name: (host, port) => host.endsWith(`.${rule.domain}`) && portOk(port) };
    case 'address': {
      const ip = parseIp(rule.address);
      if (!ip) throw new ToolhostError('INVALID_INPUT', `invalid egress rule address ${JSON.stringify(rule.address)}`);
      const target = unmap(ip);
      return { rule, address: (candidate, port) => candidate.family === target.family && candidate.value === target.value && portOk(port) };
    }
    case 'cidr': {
      const ip = parseIp(rule.network);
      const max = rule.family === 4 ? 32 : 128;
      if (!ip || ip.family !== rule.family || !Number.isInteger(rule.prefix) || rule.prefix < 0 || rule.prefix > max) {
        throw new ToolhostError('INVALID_INPUT', `invalid egress rule network ${JSON.stringify(`${rule.network}/${rule.prefix}`)}`);
      }
      const network = { family: ip.family, network: ip.value, prefix: rule.prefix };
      return { rule, address: (candidate) => inRange(candidate, network) };
    }
  }
}

/**
 * Decides whether a URL may be fetched under an {@link EgressPolicy}, and to
 * which address. Stateless apart from its policy: one checker can serve any
 * number of requests (a call typically builds one).
 */
export class EgressChecker {
  readonly policy: Readonly<EgressPolicy>;
  readonly #rules: CompiledRule[];
  readonly #resolve: EgressResolver;
  readonly #dnsTimeoutMs: number;

  /**
   * @param policy the label and the parsed allowlist ({@link parseEgressAllowlist}).
   * @param options an injectable resolver and the DNS timeout.
   */
  constructor(policy: EgressPolicy, options: EgressCheckerOptions = {}) {
    this.policy = { label: policy.label, allow: [...policy.allow] };
    this.#rules = this.policy.allow.map(compile);
    this.#resolve = options.resolve ?? defaultResolve;
    this.#dnsTimeoutMs = options.dnsTimeoutMs ?? DEFAULT_DNS_TIMEOUT_MS;
  }

  /**
   * Check a URL: parse it, resolve its host when the policy needs to (never
   * under `DENY_ALL`, nor under `EGRESS_RESTRICTED` when no entry could match),
   * and judge every address. Never throws: failures are denied decisions.
   */
  async check(url: URL | string): Promise<EgressDecision> {
    let parsed: URL;
    try {
      parsed = typeof url === 'string' ? new URL(url) : url;
    } catch {
      return { allowed: false, host: '', port: 0, cause: 'invalid-url', reason: `${JSON.stringify(String(url))} is not a valid URL` };
    }
    const target = targetOf(parsed);
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
      return { allowed: false, ...target, cause: 'scheme', reason: `the ${parsed.protocol} scheme is not allowed (only http: and https:)` };
    }
    if (target.host === '') return { allowed: false, ...target, cause: 'invalid-url', reason: `${parsed.href} has no host` };

    const early = this.#preflight(target);
    if (early) return early;

    const literal = parseIp(target.host);
    if (literal) return this.decide(target, [{ address: target.host, family: literal.family }]);

    let addresses: ResolvedAddress[];
    try {
      addresses = await this.#lookup(parsed.hostname);
    } catch (error) {
      const code = errorCode(error);
      if (code === 'DNS_TIMEOUT' || code === 'ETIMEOUT') {
        return { allowed: false, ...target, cause: 'dns-timeout', reason: `resolving ${target.host} timed out` };
      }
      return { allowed: false, ...target, cause: 'dns-failure', reason: `could not resolve ${target.host}${code ? ` (${code})` : ''}`, ...(code ? { dnsCode: code } : {}) };
    }
    if (addresses.length === 0) {
      return { allowed: false, ...target, cause: 'dns-failure', reason: `${target.host} has no addresses`, dnsCode: 'ENODATA' };
    }
    return this.decide(target, addresses);
  }

  /**
   * Judge a destination whose addresses are known (a pure function of the
   * policy: no DNS). `target.host` is the name as the URL gives it (or the
   * literal address); `addresses` are what it resolved to. Addresses that are
   * not IP addresses are refused.
   */
  decide(target: EgressTarget, addresses: readonly ResolvedAddress[]): EgressDecision {
    const host = normalizeHost(target.host);
    const { port } = target;
    const early = this.#preflight({ host, port });
    if (early) return early;
    const { label } = this.policy;
    const nameRule = this.#rules.find((rule) => rule.name?.(host, port));

    const allowed: ResolvedAddress[] = [];
    const refused: Array<{ address: string; kind: AddressClass | 'invalid' }> = [];
    let firstRule: string | undefined;
    for (const candidate of addresses) {
      const parsed = parseIp(candidate.address);
      if (!parsed) {
        refused.push({ address: candidate.address, kind: 'invalid' });
        continue;
      }
      const ip = unmap(parsed);
      const text = formatIp(ip);
      const kind = classify(ip);
      const ipRule = this.#rules.find((rule) => rule.address?.(ip, port));
      const byName = nameRule !== undefined && kind !== 'metadata';
      const ok = label === 'FULL_ACCESS' || ipRule !== undefined || byName || (label === 'EGRESS_UNRESTRICTED' && kind === 'public');
      if (!ok) {
        refused.push({ address: text, kind });
        continue;
      }
      if (allowed.length === 0) firstRule = ipRule?.rule.source ?? (byName ? nameRule.rule.source : undefined);
      if (!allowed.some((seen) => seen.address === text)) allowed.push({ address: text, family: ip.family });
    }

    const first = allowed[0];
    if (first) {
      const decision: EgressAllowed = { allowed: true, host, port, address: first.address, family: first.family, addresses: allowed };
      if (firstRule !== undefined) decision.rule = firstRule;
      return decision;
    }
    const listed = refused.map(({ address, kind }) => `${address} (${kind})`).join(', ');
    const denied: EgressDenied = { allowed: false, host, port, cause: 'prohibited-address', reason: '' };
    if (refused[0]) denied.address = refused[0].address;
    if (refused.length === 0) {
      return { ...denied, cause: 'dns-failure', reason: `${host} has no addresses`, dnsCode: 'ENODATA' };
    }
    if (label === 'EGRESS_RESTRICTED' && nameRule === undefined) {
      return { ...denied, cause: 'not-allowlisted', reason: `${hostPort(host, port)} (${listed}) is not in the egress allowlist (EGRESS_RESTRICTED)` };
    }
    const why = label === 'EGRESS_UNRESTRICTED'
      ? 'EGRESS_UNRESTRICTED reaches public addresses only, unless an allowlist entry matches'
      : 'metadata addresses need an IP or CIDR allowlist entry';
    return { ...denied, reason: `${hostPort(host, port)} refused: ${listed}; ${why}` };
  }

  /** Refusals that need no address: DENY_ALL, and RESTRICTED names no entry can match. */
  #preflight(target: EgressTarget): EgressDenied | undefined {
    const { label } = this.policy;
    if (label === 'DENY_ALL') {
      return { allowed: false, ...target, cause: 'label', reason: `network policy DENY_ALL refuses all outgoing traffic (${hostPort(target.host, target.port)})` };
    }
    if (label !== 'EGRESS_RESTRICTED') return undefined;
    const canMatch = this.#rules.some((rule) => rule.address !== undefined || rule.name?.(target.host, target.port));
    if (canMatch) return undefined;
    return { allowed: false, ...target, cause: 'not-allowlisted', reason: `${hostPort(target.host, target.port)} is not in the egress allowlist (EGRESS_RESTRICTED)` };
  }

  async #lookup(host: string): Promise<ResolvedAddress[]> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(Object.assign(new Error(`resolving ${host} timed out`), { code: 'DNS_TIMEOUT' })), this.#dnsTimeoutMs);
      timer.unref();
    });
    try {
      return await Promise.race([this.#resolve(host), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
}

/** The host (lower case, no brackets, one trailing dot dropped) and effective port of a URL. */
function targetOf(url: URL): EgressTarget {
  const host = normalizeHost(url.hostname);
  const port = url.port !== '' ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
  return { host, port };
}

function normalizeHost(hostname: string): string {
  let host = hostname.toLowerCase();
  if (host.startsWith('[') && host.endsWith(']')) host = host.slice(1, -1);
  if (host.endsWith('.') && host.length > 1) host = host.slice(0, -1);
  return host;
}

function hostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

function errorCode(error: unknown): string | undefined {
  if (typeof error === 'object' && error !== null && typeof (error as { code?: unknown }).code === 'string') {
    return (error as { code: string }).code;
  }
  return undefined;
}
