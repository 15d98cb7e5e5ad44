/**
 * The egress allowlist: its entries as written in config (host, `*.domain`,
 * host:port, IP, [IPv6]:port, CIDR), parsed into canonical rules, and the
 * matchers the checker runs against a name and its resolved addresses.
 *
 * - Host-name entries match the name as written in the URL (lower-cased, one
 *   trailing dot ignored), in ASCII (punycode) form.
 * - A name whose last label is numeric is refused: URL parsing would treat it
 *   as an IPv4 address (`127.1`, `0x7f.1`, `2130706433`), so it is neither a
 *   name nor a (strict) address here.
 * - `::ffff:a.b.c.d` entries are IPv4 entries (mapped addresses are IPv4 for
 *   every purpose), and so is `::ffff:a.b.c.d/n` with n >= 96.
 */
import { isIPv4, isIPv6 } from 'node:net';
import { domainToASCII } from 'node:url';
import { ToolhostError } from '../base/errors.js';
import { formatAddress, inNetwork, networkAddress, parseAddress, sameAddress, unmapped, type IpAddress } from './addresses.js';

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
    const ip = parseAddress(addressText);
    if (!ip) throw new EntryError(`${JSON.stringify(addressText)} is not an IP address (a CIDR is address/prefix)`);
    const max = ip.family === 4 ? 32 : 128;
    if (!/^\d{1,3}$/.test(prefixText) || Number(prefixText) > max) throw new EntryError(`the prefix length must be 0 to ${max}`);
    let prefix = Number(prefixText);
    let network = ip;
    // ::ffff:a.b.c.d/n with n >= 96 is an IPv4 network (mapped addresses are IPv4 here).
    const v4 = unmapped(ip);
    if (v4.family === 4 && ip.family === 6 && prefix >= 96) {
      network = v4;
      prefix -= 96;
    }
    const base = networkAddress(network, prefix);
    if (!sameAddress(base, network)) throw new EntryError(`host bits are set; did you mean ${formatAddress(base)}/${prefix}?`);
    return { kind: 'cidr', network: formatAddress(network), prefix, family: network.family, source };
  }

  if (text.startsWith('[')) {
    const close = text.indexOf(']');
    if (close < 0) throw new EntryError('unclosed "["');
    const inner = text.slice(1, close);
    const ip = isIPv6(inner) ? parseAddress(inner) : undefined;
    if (!ip) throw new EntryError(`${JSON.stringify(inner)} is not an IPv6 address`);
    const rest = text.slice(close + 1);
    const port = rest === '' ? undefined : rest.startsWith(':') ? parsePort(rest.slice(1)) : badEntry('expected ":port" after "]"');
    return addressRule(ip, port, source);
  }

  // A bare IPv6 address (no port: use [v6]:port for one).
  if ((text.match(/:/g) ?? []).length > 1) {
    const ip = isIPv6(text) ? parseAddress(text) : undefined;
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

  const literal = isIPv4(hostText) ? parseAddress(hostText) : undefined;
  if (literal) return addressRule(literal, port, source);

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

function addressRule(ip: IpAddress, port: number | undefined, source: string): EgressRule {
  const canonical = unmapped(ip);
  const rule: EgressRule = { kind: 'address', address: formatAddress(canonical), family: canonical.family, source };
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

/**
 * A rule ready to match: `name` for host and domain entries (the URL's host
 * and port), `address` for address and CIDR entries (an unmapped address and
 * the port).
 */
export interface CompiledRule {
  rule: EgressRule;
  name?: (host: string, port: number) => boolean;
  address?: (ip: IpAddress, port: number) => boolean;
}

/**
 * Compile a rule. Rules normally come from {@link parseEgressAllowlist}; a
 * hand-built one with a bad address or network is refused here.
 *
 * @throws ToolhostError `INVALID_INPUT` for a malformed address or network.
 */
export function compileRule(rule: EgressRule): CompiledRule {
  const portOk = (port: number): boolean => rule.kind === 'cidr' || rule.port === undefined || rule.port === port;
  switch (rule.kind) {
    case 'host':
      return { rule, name: (host, port) => host === rule.host && portOk(port) };
    case 'domain':
      return { rule, name: (host, port) => host.endsWith(`.${rule.domain}`) && portOk(port) };
    case 'address': {
      const ip = parseAddress(rule.address);
      if (!ip) throw new ToolhostError('INVALID_INPUT', `invalid egress rule address ${JSON.stringify(rule.address)}`);
      const target = unmapped(ip);
      return { rule, address: (candidate, port) => sameAddress(candidate, target) && portOk(port) };
    }
    case 'cidr': {
      const ip = parseAddress(rule.network);
      const max = rule.family === 4 ? 32 : 128;
      if (!ip || ip.family !== rule.family || !Number.isInteger(rule.prefix) || rule.prefix < 0 || rule.prefix > max) {
        throw new ToolhostError('INVALID_INPUT', `invalid egress rule network ${JSON.stringify(`${rule.network}/${rule.prefix}`)}`);
      }
      return { rule, address: (candidate) => inNetwork(candidate, ip, rule.prefix) };
    }
  }
}
