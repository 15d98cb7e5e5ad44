/**
 * The OAuth 2.1 resource server's options: what a user gives
 * ({@link OAuthOptions}) and what the server runs with ({@link ResolvedOAuth}),
 * checked once at the boundary with messages that name the option.
 *
 * Guarantees: the issuer and the JWKS URL are `https`, or `http` only on a
 * loopback address (`localhost`, 127.0.0.0/8, ::1), so a token's keys never
 * come over a network in the clear; the audience (this server's resource URI,
 * RFC 8707) is an absolute http(s) URL without a fragment; every scope's
 * labels are in the label vocabularies.
 *
 * It does not fetch anything: discovery and key sets are jwt-access-tokens.ts's.
 */
import { parseAddress, classifyIp } from '../../net/addresses.js';
import { NETWORK_LABELS, PRIVILEGE_LABELS, parseLabel, type NetworkLabel, type PrivilegeLabel } from '../../policy/labels.js';

/** How to introspect opaque tokens (RFC 7662). */
export interface IntrospectionOptions {
  /** The authorization server's introspection endpoint. */
  endpoint: string;
  /** This resource server's client id at the authorization server. */
  clientId: string;
  /** Its client secret. */
  clientSecret: string;
  /** How long an active answer is used, in ms (default 60000; never past the token's exp). */
  cacheMs?: number;
  /** How long an inactive answer is remembered (the token refused without asking again), in ms (default 30000; 0: never). */
  negativeCacheMs?: number;
  /** Requests at the endpoint at once, over all tokens (default 16). */
  maxInFlight?: number;
  /** Token checks that wait for one of those (default 256); beyond, a check is refused (503, retry). */
  maxWaiting?: number;
  /** Requests a client address may cause per second (cache hits and shared requests are free; default 5; 0: no per-address rate). */
  addressRate?: number;
  /** How many it may cause at once before the rate applies (the bucket's size, default 20). */
  addressBurst?: number;
  /** Client addresses whose rate is remembered (the least recently seen are forgotten first; default 10000). */
  maxAddresses?: number;
}

export interface ResolvedIntrospection {
  endpoint: URL;
  clientId: string;
  clientSecret: string;
  cacheMs: number;
  negativeCacheMs: number;
  maxInFlight: number;
  maxWaiting: number;
  addressRate: number;
  addressBurst: number;
  maxAddresses: number;
}

export const INTROSPECTION_DEFAULTS = { cacheMs: 60_000, negativeCacheMs: 30_000, maxInFlight: 16, maxWaiting: 256, addressRate: 5, addressBurst: 20, maxAddresses: 10_000 } as const;

/** The labels a scope lets a token's calls ask for. */
export interface ScopeLabels {
  network?: NetworkLabel | string;
  privilege?: PrivilegeLabel | string;
}

/** OAuth 2.1 access tokens (JWTs) as the servers' credentials, beside or instead of static tokens. */
export interface OAuthOptions {
  /** The authorization server's issuer identifier (the tokens' `iss`). */
  issuer: string;
  /** Its JWKS URL (default: `jwks_uri` from its RFC 8414 metadata, `/.well-known/oauth-authorization-server`). */
  jwksUri?: string;
  /** This server's resource URI (RFC 8707): the tokens' `aud` must include it. */
  audience: string;
  /** The claim naming the principal (default `sub`). */
  principalClaim?: string;
  /** The claim naming the tenant for fleet caps (default: none, the principal is the tenant). */
  tenantClaim?: string;
  /**
   * Scope → the highest labels a token holding it may ask for. When set, a token's ceiling is the
   * highest over its scopes, and MINIMAL / DENY_ALL where none of them says; when absent, tokens are
   * capped by the tools' grants only.
   */
  scopeLabels?: Record<string, ScopeLabels>;
  /** A human-readable name for the protected-resource metadata (`resource_name`). */
  resourceName?: string;
  /** The scope an access token needs to read `/metrics` (default `toolhost:metrics`); static tokens read it as before. */
  metricsScope?: string;
  /** The scope an access token needs to call the admin tools (`toolhost_load`, `toolhost_unload`; default `toolhost:admin`). */
  adminScope?: string;
  /** Allowed clock skew for `exp` and `nbf`, in seconds (default 5). */
  clockToleranceSec?: number;
  /** How long a key set is used before it is fetched again, in ms (default 600000). */
  jwksCacheMs?: number;
  /** After a fetch, how long a token with an unknown key waits before it may cause another, in ms (default 30000). */
  jwksCooldownMs?: number;
  /** Time limit of a key-set or metadata request, in ms (default 5000). */
  fetchTimeoutMs?: number;
  /** Largest key set read, in bytes (default 262144); a larger one leaves tokens unchecked (503) until it shrinks. */
  maxJwksBytes?: number;
  /** Opaque (non-JWT) access tokens are checked at the issuer's RFC 7662 introspection endpoint. */
  introspection?: IntrospectionOptions;
  /**
   * Accept JWTs whose header `typ` is `JWT` (or absent), not only RFC 9068's `at+jwt` (default false). Weaker:
   * such a token cannot be told from an ID token or another JWT the issuer signs with the same keys, so only
   * its `aud` keeps them apart. For issuers that cannot mint `at+jwt` access tokens.
   */
  acceptPlainJwt?: boolean;
}

export interface ResolvedOAuth {
  issuer: string;
  jwksUri: URL | undefined;
  audience: string;
  principalClaim: string;
  tenantClaim: string | undefined;
  scopeLabels: Map<string, { network?: NetworkLabel; privilege?: PrivilegeLabel }> | undefined;
  resourceName: string | undefined;
  metricsScope: string;
  adminScope: string;
  clockToleranceSec: number;
  jwksCacheMs: number;
  jwksCooldownMs: number;
  fetchTimeoutMs: number;
  maxJwksBytes: number;
  introspection: ResolvedIntrospection | undefined;
  acceptPlainJwt: boolean;
}

export const OAUTH_DEFAULTS = { metricsScope: 'toolhost:metrics', adminScope: 'toolhost:admin', principalClaim: 'sub', clockToleranceSec: 5, jwksCacheMs: 600_000, jwksCooldownMs: 30_000, fetchTimeoutMs: 5_000, maxJwksBytes: 262_144 } as const;

/** Check `options.oauth`; throws a TypeError naming the bad option. */
export function resolveOAuthOptions(options: OAuthOptions, where = 'options.oauth'): ResolvedOAuth {
  if (typeof options !== 'object' || options === null) throw new TypeError(`${where} must be an object { issuer, audience, ... }`);
  fetchableUrl(options.issuer, `${where}.issuer`);
  const jwksUri = options.jwksUri === undefined ? undefined : fetchableUrl(options.jwksUri, `${where}.jwksUri`);
  if (typeof options.audience !== 'string') throw new TypeError(`${where}.audience must be this server's resource URI (an absolute URL)`);
  let audience: URL;
  try {
    audience = new URL(options.audience);
  } catch {
    throw new TypeError(`${where}.audience must be an absolute URL (this server's resource URI), not ${JSON.stringify(options.audience)}`);
  }
  if ((audience.protocol !== 'https:' && audience.protocol !== 'http:') || audience.hash !== '') {
    throw new TypeError(`${where}.audience must be an http(s) URL without a fragment (RFC 8707)`);
  }
  const claim = (value: unknown, name: string): string | undefined => {
    if (value === undefined) return undefined;
    if (typeof value !== 'string' || !/^[A-Za-z0-9_.:/-]{1,128}$/.test(value)) throw new TypeError(`${where}.${name} must be a claim name`);
    return value;
  };
  const number = (value: unknown, name: string, fallback: number, min: number): number => {
    if (value === undefined) return fallback;
    if (typeof value !== 'number' || !Number.isFinite(value) || value < min) throw new TypeError(`${where}.${name} must be a number >= ${min}`);
    return value;
  };
  return {
    issuer: options.issuer,
    jwksUri,
    audience: options.audience,
    principalClaim: claim(options.principalClaim, 'principalClaim') ?? OAUTH_DEFAULTS.principalClaim,
    tenantClaim: claim(options.tenantClaim, 'tenantClaim'),
    scopeLabels: options.scopeLabels === undefined ? undefined : resolveScopeLabels(options.scopeLabels, `${where}.scopeLabels`),
    resourceName: options.resourceName,
    metricsScope: scopeToken(options.metricsScope, `${where}.metricsScope`) ?? OAUTH_DEFAULTS.metricsScope,
    adminScope: scopeToken(options.adminScope, `${where}.adminScope`) ?? OAUTH_DEFAULTS.adminScope,
    clockToleranceSec: number(options.clockToleranceSec, 'clockToleranceSec', OAUTH_DEFAULTS.clockToleranceSec, 0),
    jwksCacheMs: number(options.jwksCacheMs, 'jwksCacheMs', OAUTH_DEFAULTS.jwksCacheMs, 0),
    jwksCooldownMs: number(options.jwksCooldownMs, 'jwksCooldownMs', OAUTH_DEFAULTS.jwksCooldownMs, 0),
    fetchTimeoutMs: number(options.fetchTimeoutMs, 'fetchTimeoutMs', OAUTH_DEFAULTS.fetchTimeoutMs, 1),
    maxJwksBytes: number(options.maxJwksBytes, 'maxJwksBytes', OAUTH_DEFAULTS.maxJwksBytes, 1024),
    introspection: options.introspection === undefined ? undefined : resolveIntrospection(options.introspection, `${where}.introspection`, number),
    acceptPlainJwt: flag(options.acceptPlainJwt, `${where}.acceptPlainJwt`),
  };
}

function resolveIntrospection(options: IntrospectionOptions, where: string, number: (value: unknown, name: string, fallback: number, min: number) => number): ResolvedIntrospection {
  if (typeof options !== 'object' || options === null) throw new TypeError(`${where} must be an object { endpoint, clientId, clientSecret }`);
  const endpoint = fetchableUrl(options.endpoint, `${where}.endpoint`);
  for (const name of ['clientId', 'clientSecret'] as const) {
    if (typeof options[name] !== 'string' || options[name] === '') throw new TypeError(`${where}.${name} must be a non-empty string`);
  }
  const integer = (value: unknown, name: keyof typeof INTROSPECTION_DEFAULTS, min: number): number => {
    const resolved = number(value, `introspection.${name}`, INTROSPECTION_DEFAULTS[name], min);
    if (!Number.isInteger(resolved)) throw new TypeError(`${where}.${name} must be an integer >= ${min}`);
    return resolved;
  };
  return {
    endpoint,
    clientId: options.clientId,
    clientSecret: options.clientSecret,
    cacheMs: number(options.cacheMs, 'introspection.cacheMs', INTROSPECTION_DEFAULTS.cacheMs, 0),
    negativeCacheMs: number(options.negativeCacheMs, 'introspection.negativeCacheMs', INTROSPECTION_DEFAULTS.negativeCacheMs, 0),
    maxInFlight: integer(options.maxInFlight, 'maxInFlight', 1),
    maxWaiting: integer(options.maxWaiting, 'maxWaiting', 0),
    addressRate: number(options.addressRate, 'introspection.addressRate', INTROSPECTION_DEFAULTS.addressRate, 0),
    addressBurst: integer(options.addressBurst, 'addressBurst', 1),
    maxAddresses: integer(options.maxAddresses, 'maxAddresses', 1),
  };
}

function flag(value: unknown, where: string): boolean {
  if (value === undefined) return false;
  if (typeof value !== 'boolean') throw new TypeError(`${where} must be true or false`);
  return value;
}

/** An RFC 6749 scope token (no space, quote or backslash: it goes in a WWW-Authenticate header), or undefined. */
function scopeToken(value: unknown, where: string): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !/^[\x21\x23-\x5b\x5d-\x7e]{1,128}$/.test(value)) throw new TypeError(`${where} must be a scope (1-128 visible ASCII characters, no quote or backslash)`);
  return value;
}

function resolveScopeLabels(map: Record<string, ScopeLabels>, where: string): ResolvedOAuth['scopeLabels'] {
  if (typeof map !== 'object' || map === null || Array.isArray(map)) throw new TypeError(`${where} must map scopes to { network, privilege }`);
  const resolved: NonNullable<ResolvedOAuth['scopeLabels']> = new Map();
  for (const [scope, labels] of Object.entries(map)) {
    if (!/^[\x21\x23-\x5b\x5d-\x7e]+$/.test(scope)) throw new TypeError(`${where}: "${scope}" is not a scope token (RFC 6749)`);
    if (typeof labels !== 'object' || labels === null) throw new TypeError(`${where}["${scope}"] must be { network?, privilege? }`);
    const entry: { network?: NetworkLabel; privilege?: PrivilegeLabel } = {};
    if (labels.network !== undefined) {
      const network = typeof labels.network === 'string' ? parseLabel(NETWORK_LABELS, labels.network) : undefined;
      if (network === undefined) throw new TypeError(`${where}["${scope}"].network must be one of ${NETWORK_LABELS.join(', ')}`);
      entry.network = network;
    }
    if (labels.privilege !== undefined) {
      const privilege = typeof labels.privilege === 'string' ? parseLabel(PRIVILEGE_LABELS, labels.privilege) : undefined;
      if (privilege === undefined) throw new TypeError(`${where}["${scope}"].privilege must be one of ${PRIVILEGE_LABELS.join(', ')}`);
      entry.privilege = privilege;
    }
    resolved.set(scope, entry);
  }
  return resolved;
}

/** A URL keys or metadata may be fetched from: https, or http on loopback only. Throws a TypeError naming `where`. */
export function fetchableUrl(value: unknown, where: string): URL {
  let url: URL;
  try {
    url = new URL(String(value));
  } catch {
    throw new TypeError(`${where} must be an absolute https URL, not ${JSON.stringify(value)}`);
  }
  if (typeof value !== 'string' || url.hash !== '' || url.username !== '' || url.password !== '') throw new TypeError(`${where} must be an https URL without credentials or a fragment`);
  if (url.protocol === 'https:') return url;
  if (url.protocol === 'http:' && isLoopbackHost(url.hostname)) return url;
  throw new TypeError(`${where} must be an https URL (http only on a loopback address), not ${url.protocol}//${url.host}`);
}

/** `localhost`, 127.0.0.0/8 or ::1 (a URL's hostname, IPv6 in brackets). */
export function isLoopbackHost(hostname: string): boolean {
  const name = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (name === 'localhost') return true;
  const address = parseAddress(name);
  return address !== undefined && classifyIp(address) === 'loopback';
}
