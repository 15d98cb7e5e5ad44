/**
 * The egress checker: may this call send a request to this URL, and to which
 * IP address exactly? (Address classes live in addresses.ts, allowlist entries
 * in allowlist.ts.)
 *
 * The decision follows the call's `network_policy` label:
 *
 * - `DENY_ALL`: nothing is allowed (and no DNS query is made).
 * - `EGRESS_RESTRICTED`: only allowlisted destinations (see
 *   {@link parseEgressAllowlist} in allowlist.ts). A name that matches no host or `*.domain`
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
 * in `pinned-client.ts` does), so a second lookup cannot rebind the name.
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
import type { NetworkLabel } from '../policy/labels.js';
import { classifyIp, formatAddress, parseAddress, unmapped, type AddressClass } from './addresses.js';
import { compileRule, parseEgressAllowlist, type CompiledRule, type EgressRule } from './allowlist.js';

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
    this.#rules = this.policy.allow.map(compileRule);
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

    const literal = parseAddress(target.host);
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
      const parsed = parseAddress(candidate.address);
      if (!parsed) {
        refused.push({ address: candidate.address, kind: 'invalid' });
        continue;
      }
      const ip = unmapped(parsed);
      const text = formatAddress(ip);
      const kind = classifyIp(ip);
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

/** Checkers made by `checkerFor`: per allowlist array (a grant's own), then per label. */
const sharedCheckers = new WeakMap<readonly string[], Map<NetworkLabel, EgressChecker>>();

/**
 * The checker for a call's label and its grant's allowlist strings, parsed
 * and compiled once per grant (the same array every call of the grant sees:
 * CallCapabilities.egressAllow) instead of on every call. A checker holds no
 * call's state, so calls share it; with `options` (a resolver of the
 * caller's, a DNS timeout) a new one is made.
 */
export function checkerFor(label: NetworkLabel, allow: readonly string[], options?: EgressCheckerOptions): EgressChecker {
  if (options !== undefined) return new EgressChecker({ label, allow: parseEgressAllowlist(allow) }, options);
  let byLabel = sharedCheckers.get(allow);
  if (byLabel === undefined) sharedCheckers.set(allow, (byLabel = new Map()));
  let checker = byLabel.get(label);
  if (checker === undefined) byLabel.set(label, (checker = new EgressChecker({ label, allow: parseEgressAllowlist(allow) })));
  return checker;
}
