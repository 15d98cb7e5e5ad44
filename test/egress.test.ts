/**
 * The egress checker (allowlist parsing, address classes, decisions per label
 * with an injected resolver) and the pinned HTTP client against local servers
 * on 127.0.0.1. No other address is ever contacted: public addresses appear
 * only in injected resolver answers for decisions that never connect.
 */
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import { createServer as createTcpServer, type AddressInfo, type Server as TcpServer, type Socket } from 'node:net';
import { createSecureContext } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ToolhostError } from '../host/base/errors.js';
import { canonicalAddress, classifyAddress } from '../host/net/addresses.js';
import { parseEgressAllowlist } from '../host/net/allowlist.js';
import { EgressChecker, type EgressDecision, type EgressResolver, type ResolvedAddress } from '../host/net/egress-checker.js';
import { EgressError } from '../host/net/errors.js';
import { egressFetch, egressStream, type EgressRequest } from '../host/net/pinned-client.js';
import { followRedirects, followRedirectsStream } from '../host/net/redirects.js';
import { wasiHttpErrorCodeOf } from '../host/sandbox/wasi/http-error-code.js';
import type { NetworkLabel } from '../host/policy/labels.js';

// ---------------------------------------------------------------------------
// Helpers

/** A resolver from a fixed table; unknown names fail like getaddrinfo does. Records every query. */
function tableResolver(table: Record<string, string[]>): EgressResolver & { queries: string[] } {
  const queries: string[] = [];
  const resolve = async (host: string): Promise<ResolvedAddress[]> => {
    queries.push(host);
    // Like DNS, an absolute name (trailing dot) is the same name.
    const found = table[host.endsWith('.') ? host.slice(0, -1) : host];
    if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    return found.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
  return Object.assign(resolve, { queries });
}

const names = {
  'public.test': ['93.184.216.34'],
  'loopback.test': ['127.0.0.1'],
  'metadata.test': ['169.254.169.254'],
  'metadata6.test': ['fd00:ec2::254'],
  'mapped.test': ['::ffff:127.0.0.1'],
  'mixed.test': ['127.0.0.1', '10.1.2.3', '93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946'],
  'private.test': ['10.1.2.3', '192.168.1.1'],
  'v6.test': ['2606:2800:220:1:248:1893:25c8:1946'],
  'api.example.com': ['93.184.216.34'],
  'deep.api.example.com': ['93.184.216.35'],
  'example.com': ['93.184.216.34'],
  'internal.corp': ['10.20.30.40'],
  'localhost': ['127.0.0.1'],
  'pinned.test': ['127.0.0.1'],
  'other.test': ['127.0.0.1'],
};

function checker(label: NetworkLabel, allow: string[] = [], table: Record<string, string[]> = names): EgressChecker {
  return new EgressChecker({ label, allow: parseEgressAllowlist(allow) }, { resolve: tableResolver(table) });
}

async function failure(promise: Promise<unknown>): Promise<EgressError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof EgressError) return error;
    throw error;
  }
  throw new Error('expected an EgressError');
}

function get(url: string, extra: Partial<EgressRequest> = {}): EgressRequest {
  return { method: 'GET', url, headers: [], ...extra };
}

function denied(decision: EgressDecision): Extract<EgressDecision, { allowed: false }> {
  if (decision.allowed) throw new Error(`expected a denial, got ${JSON.stringify(decision)}`);
  return decision;
}

function allowed(decision: EgressDecision): Extract<EgressDecision, { allowed: true }> {
  if (!decision.allowed) throw new Error(`expected an allowed decision, got ${decision.reason}`);
  return decision;
}

// ---------------------------------------------------------------------------
// Allowlist parsing

describe('parseEgressAllowlist', () => {
  it('parses every entry form into canonical rules', () => {
    expect(parseEgressAllowlist([
      'API.Example.COM',
      'api.example.com:8443',
      'localhost.',
      '*.example.org',
      '*.Example.org:443',
      '127.0.0.1',
      '127.0.0.1:8080',
      '[::1]:8080',
      '[FD00::0001]',
      'fd00:0:0::1',
      '::ffff:10.0.0.1',
      '10.0.0.0/8',
      'fd00::/8',
      '::ffff:192.168.0.0/112',
      '0.0.0.0/0',
      'bücher.de',
      ' spaced.example ',
    ])).toEqual([
      { kind: 'host', host: 'api.example.com', source: 'API.Example.COM' },
      { kind: 'host', host: 'api.example.com', port: 8443, source: 'api.example.com:8443' },
      { kind: 'host', host: 'localhost', source: 'localhost.' },
      { kind: 'domain', domain: 'example.org', source: '*.example.org' },
      { kind: 'domain', domain: 'example.org', port: 443, source: '*.Example.org:443' },
      { kind: 'address', address: '127.0.0.1', family: 4, source: '127.0.0.1' },
      { kind: 'address', address: '127.0.0.1', family: 4, port: 8080, source: '127.0.0.1:8080' },
      { kind: 'address', address: '::1', family: 6, port: 8080, source: '[::1]:8080' },
      { kind: 'address', address: 'fd00::1', family: 6, source: '[FD00::0001]' },
      { kind: 'address', address: 'fd00::1', family: 6, source: 'fd00:0:0::1' },
      { kind: 'address', address: '10.0.0.1', family: 4, source: '::ffff:10.0.0.1' },
      { kind: 'cidr', network: '10.0.0.0', prefix: 8, family: 4, source: '10.0.0.0/8' },
      { kind: 'cidr', network: 'fd00::', prefix: 8, family: 6, source: 'fd00::/8' },
      { kind: 'cidr', network: '192.168.0.0', prefix: 16, family: 4, source: '::ffff:192.168.0.0/112' },
      { kind: 'cidr', network: '0.0.0.0', prefix: 0, family: 4, source: '0.0.0.0/0' },
      { kind: 'host', host: 'xn--bcher-kva.de', source: 'bücher.de' },
      { kind: 'host', host: 'spaced.example', source: ' spaced.example ' },
    ]);
    expect(parseEgressAllowlist([])).toEqual([]);
  });

  it.each([
    ['', /empty/],
    ['https://example.com', /not a URL/],
    ['example.com:0', /out of range/],
    ['example.com:65536', /out of range/],
    ['example.com:http', /not a port/],
    ['example.com:', /not a port/],
    [':80', /no host/],
    ['*', /not a valid host name|wildcard/],
    ['*.', /not a valid host name/],
    ['a.*.example.com', /wildcard/],
    ['exa mple.com', /whitespace/],
    ['foo..bar', /not a valid host name/],
    ['-bad.example', /not a valid host name/],
    ['1.2.3', /neither a valid IPv4/],
    ['256.1.1.1', /neither a valid IPv4/],
    ['10.0.0.1/8', /host bits are set; did you mean 10.0.0.0\/8/],
    ['10.0.0.0/33', /prefix length must be 0 to 32/],
    ['10.0.0.0/', /prefix length/],
    ['fd00::/129', /prefix length must be 0 to 128/],
    ['example.com/8', /not an IP address/],
    ['[1.2.3.4]:80', /not an IPv6 address/],
    ['[::1', /unclosed/],
    ['[::1]80', /":port"/],
    ['fd00::zz', /not an IPv6 address/],
    ['127.1', /neither a valid IPv4/],
    ['0x7f.1', /neither a valid IPv4/],
    ['2130706433', /neither a valid IPv4/],
    ['0177.0.0.1:80', /neither a valid IPv4/],
    ['0x7f.0.0.1/8', /not an IP address/],
  ])('refuses %j with INVALID_INPUT naming the entry', (entry, why) => {
    let thrown: unknown;
    try {
      parseEgressAllowlist(['ok.example', entry]);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ToolhostError);
    const error = thrown as ToolhostError;
    expect(error.code).toBe('INVALID_INPUT');
    expect(error.message).toContain(JSON.stringify(entry));
    expect(error.message).toMatch(why);
  });
});

// ---------------------------------------------------------------------------
// Address classes

describe('classifyAddress', () => {
  it.each([
    ['93.184.216.34', 'public'],
    ['8.8.8.8', 'public'],
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'reserved'],
    ['10.0.0.1', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['172.32.0.1', 'public'],
    ['192.168.1.1', 'private'],
    ['169.254.1.1', 'link-local'],
    ['169.254.169.254', 'metadata'],
    ['169.254.170.2', 'metadata'],
    ['100.100.100.200', 'metadata'],
    ['168.63.129.16', 'metadata'],
    ['100.64.0.1', 'cgnat'],
    ['100.127.255.255', 'cgnat'],
    ['100.128.0.1', 'public'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['240.0.0.1', 'reserved'],
    ['192.0.2.1', 'reserved'],
    ['198.18.0.1', 'reserved'],
    ['203.0.113.7', 'reserved'],
    ['::1', 'loopback'],
    ['::', 'unspecified'],
    ['fc00::1', 'private'],
    ['fd12:3456::1', 'private'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['[fe80::1]', 'link-local'],
    ['fd00:ec2::254', 'metadata'],
    ['ff02::1', 'multicast'],
    ['2001:db8::1', 'reserved'],
    ['2001::1', 'reserved'],
    ['100::1', 'reserved'],
    ['::2', 'reserved'],
    ['2606:2800:220:1:248:1893:25c8:1946', 'public'],
    ['2a00:1450:4001:80e::200e', 'public'],
    // IPv4-mapped IPv6, in both spellings: classified as the IPv4 address.
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::FFFF:169.254.169.254', 'metadata'],
    ['::ffff:10.0.0.1', 'private'],
    ['::ffff:93.184.216.34', 'public'],
    // NAT64 and 6to4 carry an IPv4 address too.
    ['64:ff9b::7f00:1', 'loopback'],
    ['64:ff9b::a9fe:a9fe', 'metadata'],
    ['64:ff9b::5db8:d822', 'public'],
    ['2002:7f00:1::1', 'loopback'],
    ['2002:5db8:d822::1', 'public'],
    ['64:ff9b::127.0.0.1', 'loopback'],
    ['2002:a9fe:a9fe::1', 'metadata'],
    ['::ffff:a9fe:a9fe', 'metadata'],
    // The IPv4-translated form (::ffff:0:a.b.c.d) is not a mapped address: outside 2000::/3, so reserved.
    ['::ffff:0:7f00:1', 'reserved'],
  ])('%s is %s', (ip, kind) => {
    expect(classifyAddress(ip)).toBe(kind);
  });

  it('refuses what is not an IP address', () => {
    expect(() => classifyAddress('localhost')).toThrow(expect.objectContaining({ code: 'INVALID_INPUT' }));
    expect(() => classifyAddress('127.1')).toThrow(/not an IP address/);
    // Spellings that inet_aton and URL parsing accept are not addresses here (the URL parser has normalised them already).
    for (const odd of ['0x7f.1', '2130706433', '0177.0.0.1', '127.000.000.001', '0x7f000001']) {
      expect(() => classifyAddress(odd), odd).toThrow(/not an IP address/);
      expect(canonicalAddress(odd), odd).toBeUndefined();
    }
  });

  it('canonicalises addresses', () => {
    expect(canonicalAddress('::FFFF:7F00:1')).toBe('127.0.0.1');
    expect(canonicalAddress('2001:0db8:0000:0000:0000:0000:0000:0001')).toBe('2001:db8::1');
    expect(canonicalAddress('2001:db8:0:1:0:0:0:1')).toBe('2001:db8:0:1::1');
    expect(canonicalAddress('1:0:0:2:0:0:0:3')).toBe('1:0:0:2::3');
    expect(canonicalAddress('nope')).toBeUndefined();
  });
});

// ---------------------------------------------------------------------------
// Decisions per label

describe('EgressChecker decisions', () => {
  it('DENY_ALL refuses everything without a DNS query', async () => {
    const resolve = tableResolver(names);
    const deny = new EgressChecker({ label: 'DENY_ALL', allow: parseEgressAllowlist(['public.test', '0.0.0.0/0']) }, { resolve });
    for (const url of ['http://public.test/', 'https://93.184.216.34/', 'http://127.0.0.1:8080/']) {
      expect(denied(await deny.check(url)).cause).toBe('label');
    }
    expect(resolve.queries).toEqual([]);
  });

  it('FULL_ACCESS allows every address, still resolving once to pin the connection', async () => {
    const full = checker('FULL_ACCESS');
    expect(allowed(await full.check('http://loopback.test:1234/x'))).toMatchObject({ host: 'loopback.test', port: 1234, address: '127.0.0.1', family: 4 });
    expect(allowed(await full.check('http://metadata.test/'))).toMatchObject({ address: '169.254.169.254' });
    expect(allowed(await full.check('https://[::1]/'))).toMatchObject({ host: '::1', port: 443, address: '::1', family: 6 });
    expect(denied(await full.check('ftp://public.test/')).cause).toBe('scheme');
    expect(denied(await full.check('file:///etc/passwd')).reason).toMatch(/file: scheme is not allowed/);
    expect(denied(await full.check('not a url')).cause).toBe('invalid-url');
  });

  describe('EGRESS_UNRESTRICTED', () => {
    const open = checker('EGRESS_UNRESTRICTED');

    it('allows names resolving to public addresses, and public literals', async () => {
      expect(allowed(await open.check('https://public.test/'))).toMatchObject({ address: '93.184.216.34', port: 443 });
      expect(allowed(await open.check('http://v6.test/'))).toMatchObject({ address: '2606:2800:220:1:248:1893:25c8:1946', family: 6 });
      expect(allowed(await open.check('http://93.184.216.34:8080/'))).toMatchObject({ address: '93.184.216.34', port: 8080 });
      expect(allowed(await open.check('http://[2606:2800:220:1:248:1893:25c8:1946]/'))).toMatchObject({ family: 6 });
    });

    it('refuses names resolving to loopback, private or metadata addresses', async () => {
      for (const host of ['loopback.test', 'private.test', 'metadata.test', 'metadata6.test', 'mapped.test', 'localhost']) {
        const decision = denied(await open.check(`http://${host}/`));
        expect(decision.cause, host).toBe('prohibited-address');
      }
      expect(denied(await open.check('http://metadata.test/')).reason).toMatch(/169\.254\.169\.254 \(metadata\)/);
      expect(denied(await open.check('http://mapped.test/'))).toMatchObject({ address: '127.0.0.1' });
    });

    it('refuses non-public literal addresses in every spelling', async () => {
      for (const url of [
        'http://127.0.0.1/', 'http://127.1/', 'http://0x7f000001/', 'http://2130706433/', 'http://0.0.0.0/',
        'http://0x7f.1/', 'http://0177.0.0.1/', 'http://0xa9.0xfe.0xa9.0xfe/', 'http://[::ffff:7f00:1]/', 'http://[2002:7f00:1::1]/',
        'http://[::1]/', 'http://[::]/', 'http://[::ffff:127.0.0.1]/', 'http://[::ffff:a9fe:a9fe]/',
        'http://169.254.169.254/latest/meta-data/', 'http://[fd00:ec2::254]/', 'http://10.0.0.1/', 'http://[fe80::1]/',
        'http://100.64.0.1/', 'http://224.0.0.1/', 'http://255.255.255.255/', 'http://[64:ff9b::7f00:1]/',
      ]) {
        expect(denied(await open.check(url)).cause, url).toBe('prohibited-address');
      }
    });

    it('keeps only the allowed addresses of a name that has several', async () => {
      const decision = allowed(await open.check('http://mixed.test/'));
      expect(decision.address).toBe('93.184.216.34');
      expect(decision.addresses).toEqual([
        { address: '93.184.216.34', family: 4 },
        { address: '2606:2800:220:1:248:1893:25c8:1946', family: 6 },
      ]);
    });

    it('lets allowlist entries open non-public destinations', async () => {
      const some = checker('EGRESS_UNRESTRICTED', ['loopback.test', '10.0.0.0/8', '127.0.0.1:9000']);
      expect(allowed(await some.check('http://loopback.test:1/'))).toMatchObject({ address: '127.0.0.1', rule: 'loopback.test' });
      expect(allowed(await some.check('http://private.test/'))).toMatchObject({ address: '10.1.2.3', rule: '10.0.0.0/8' });
      expect(allowed(await some.check('http://127.0.0.1:9000/'))).toMatchObject({ rule: '127.0.0.1:9000' });
      expect(denied(await some.check('http://127.0.0.1:9001/')).cause).toBe('prohibited-address');
      expect(allowed(await some.check('http://[::ffff:127.0.0.1]:9000/'))).toMatchObject({ address: '127.0.0.1', family: 4 });
      // Public destinations need no entry; they carry no rule.
      expect(allowed(await some.check('http://public.test/')).rule).toBeUndefined();
    });

    it('never reaches metadata through a host-name entry, only through an IP entry', async () => {
      expect(denied(await checker('EGRESS_UNRESTRICTED', ['metadata.test']).check('http://metadata.test/')).cause).toBe('prohibited-address');
      expect(allowed(await checker('EGRESS_UNRESTRICTED', ['169.254.169.254']).check('http://metadata.test/')).address).toBe('169.254.169.254');
    });

    it('reports DNS failures as such', async () => {
      expect(denied(await open.check('http://nowhere.test/'))).toMatchObject({ cause: 'dns-failure', dnsCode: 'ENOTFOUND' });
      const slow = new EgressChecker({ label: 'EGRESS_UNRESTRICTED', allow: [] }, { resolve: () => new Promise(() => undefined), dnsTimeoutMs: 50 });
      expect(denied(await slow.check('http://slow.test/')).cause).toBe('dns-timeout');
      const empty = new EgressChecker({ label: 'EGRESS_UNRESTRICTED', allow: [] }, { resolve: async () => [] });
      expect(denied(await empty.check('http://empty.test/')).cause).toBe('dns-failure');
    });
  });

  describe('EGRESS_RESTRICTED', () => {
    it('allows exact hosts on any port, case-insensitively', async () => {
      const restricted = checker('EGRESS_RESTRICTED', ['API.example.com']);
      expect(allowed(await restricted.check('https://api.EXAMPLE.com/v1'))).toMatchObject({ host: 'api.example.com', port: 443, rule: 'API.example.com' });
      expect(allowed(await restricted.check('http://api.example.com:8080/'))).toMatchObject({ port: 8080 });
      expect(allowed(await restricted.check('http://api.example.com./'))).toMatchObject({ host: 'api.example.com' });
      expect(denied(await restricted.check('https://example.com/')).cause).toBe('not-allowlisted');
      expect(denied(await restricted.check('https://deep.api.example.com/')).cause).toBe('not-allowlisted');
    });

    it('allows *.domain for subdomains only, and host:port for that port only', async () => {
      const restricted = checker('EGRESS_RESTRICTED', ['*.example.com', 'example.com:8443']);
      expect(allowed(await restricted.check('https://api.example.com/'))).toMatchObject({ rule: '*.example.com' });
      expect(allowed(await restricted.check('https://deep.api.example.com/'))).toMatchObject({ address: '93.184.216.35' });
      expect(denied(await restricted.check('https://example.com/')).cause).toBe('not-allowlisted');
      expect(allowed(await restricted.check('https://example.com:8443/'))).toMatchObject({ rule: 'example.com:8443' });
      expect(denied(await restricted.check('https://notexample.com/')).cause).toBe('not-allowlisted');
    });

    it('matches IP and CIDR entries against resolved addresses and literals', async () => {
      const restricted = checker('EGRESS_RESTRICTED', ['10.0.0.0/8', '[::1]:8080']);
      expect(allowed(await restricted.check('http://internal.corp/'))).toMatchObject({ address: '10.20.30.40', rule: '10.0.0.0/8' });
      expect(allowed(await restricted.check('http://10.9.9.9/'))).toMatchObject({ address: '10.9.9.9' });
      expect(allowed(await restricted.check('http://[::1]:8080/'))).toMatchObject({ address: '::1' });
      expect(denied(await restricted.check('http://[::1]:8081/')).cause).toBe('not-allowlisted');
      expect(denied(await restricted.check('http://public.test/'))).toMatchObject({ cause: 'not-allowlisted', address: '93.184.216.34' });
    });

    it('allows loopback for an allowlisted name, but not metadata', async () => {
      const restricted = checker('EGRESS_RESTRICTED', ['localhost:3000', 'metadata.test']);
      expect(allowed(await restricted.check('http://localhost:3000/'))).toMatchObject({ address: '127.0.0.1' });
      expect(denied(await restricted.check('http://localhost:3001/')).cause).toBe('not-allowlisted');
      expect(denied(await restricted.check('http://metadata.test/')).cause).toBe('prohibited-address');
    });

    it('makes no DNS query for a name no entry can match', async () => {
      const resolve = tableResolver(names);
      const restricted = new EgressChecker({ label: 'EGRESS_RESTRICTED', allow: parseEgressAllowlist(['api.example.com']) }, { resolve });
      expect(denied(await restricted.check('http://secret-data.attacker.test/')).cause).toBe('not-allowlisted');
      expect(denied(await restricted.check('http://127.0.0.1/')).cause).toBe('not-allowlisted');
      await restricted.check('http://api.example.com/');
      expect(resolve.queries).toEqual(['api.example.com']);
    });
  });

  it('decide() is a pure function of the policy and the addresses', () => {
    const open = checker('EGRESS_UNRESTRICTED');
    expect(open.decide({ host: 'x.test', port: 80 }, [{ address: '127.0.0.1', family: 4 }]).allowed).toBe(false);
    expect(open.decide({ host: 'x.test', port: 80 }, [{ address: '::ffff:8.8.8.8', family: 6 }])).toMatchObject({ allowed: true, address: '8.8.8.8', family: 4 });
    expect(open.decide({ host: 'x.test', port: 80 }, [{ address: '0x7f.1', family: 4 }])).toMatchObject({ allowed: false, reason: expect.stringContaining('0x7f.1 (invalid)') });
    expect(open.decide({ host: 'X.TEST', port: 80 }, [{ address: 'garbage', family: 4 }])).toMatchObject({ allowed: false, host: 'x.test', reason: expect.stringContaining('garbage (invalid)') });
  });
});

// ---------------------------------------------------------------------------
// The pinned client against local servers

/** A self-signed certificate for `pinned.test` (P-256, valid until 2126), for the TLS test only. */
const TLS_KEY = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgo5dBEYfC5EBsISPM
C7qSoe6H/XGt3Ss2/1TPX9WexF2hRANCAAQM8s7R9eR3nUwJVKlgZoeU0j8vfDqn
imKoN07X2S7KYbgjoYf43n+rRE+w3p8JTGxqFJ3/j386BmofRv1SeW+O
-----END PRIVATE KEY-----
`;
const TLS_CERT = `-----BEGIN CERTIFICATE-----
MIIBmzCCAUGgAwIBAgIUK+9n1RXyKsNkq8ayUmDppBPeg4wwCgYIKoZIzj0EAwIw
FjEUMBIGA1UEAwwLcGlubmVkLnRlc3QwIBcNMjYxMTIyMDU1MTUyWhgPMjEyNjEw
MjkwNTUxNTJaMBYxFDASBgNVBAMMC3Bpbm5lZC50ZXN0MFkwEwYHKoZIzj0CAQYI
KoZIzj0DAQcDQgAEDPLO0fXkd51MCVSpYGaHlNI/L3w6p4piqDdO19kuymG4I6GH
+N5/q0RPsN6fCUxsahSd/49/OgZqH0b9UnlvjqNrMGkwHQYDVR0OBBYEFF2lx5B8
DaCmTEW6Vz4x1H9y6WliMB8GA1UdIwQYMBaAFF2lx5B8DaCmTEW6Vz4x1H9y6Wli
MA8GA1UdEwEB/wQFMAMBAf8wFgYDVR0RBA8wDYILcGlubmVkLnRlc3QwCgYIKoZI
zj0EAwIDSAAwRQIgZve1day9b6ZI9y+Cbcx0KY2aiGiVRYsvGh2eH5ZWdC0CIQDK
yeltZ3i9AK+6yWTix9HLurlprgLIgGMEdEFoZTZ8mw==
-----END CERTIFICATE-----
`;

describe('egressFetch over TLS (a local https server on 127.0.0.1)', () => {
  let server: HttpsServer;
  let port: number;
  const serverNames: string[] = [];

  beforeAll(async () => {
    const context = createSecureContext({ key: TLS_KEY, cert: TLS_CERT });
    server = createHttpsServer(
      {
        key: TLS_KEY,
        cert: TLS_CERT,
        SNICallback: (name, done) => {
          serverNames.push(name);
          done(null, context);
        },
      },
      (request, response) => {
        response.writeHead(200, { 'content-type': 'text/plain' });
        response.end(`tls ${request.headers.host ?? ''}`);
      },
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('connects to the pinned IP with SNI and the certificate check on the URL\'s host name', async () => {
    const pinned = checker('EGRESS_RESTRICTED', ['pinned.test', 'other.test']);
    const response = await egressFetch(get(`https://pinned.test:${port}/`, { ca: TLS_CERT }), pinned);
    expect(response).toMatchObject({ status: 200, address: '127.0.0.1' });
    expect(new TextDecoder().decode(response.body)).toBe(`tls pinned.test:${port}`);
    expect(serverNames).toContain('pinned.test');

    // Same IP, another name: the certificate (for pinned.test) does not match it.
    const mismatch = await failure(egressFetch(get(`https://other.test:${port}/`, { ca: TLS_CERT }), pinned));
    expect(wasiHttpErrorCodeOf(mismatch)).toEqual({ tag: 'TLS-certificate-error' });
    // Without the CA, the self-signed certificate is refused.
    const untrusted = await failure(egressFetch(get(`https://pinned.test:${port}/`), pinned));
    expect(wasiHttpErrorCodeOf(untrusted)).toEqual({ tag: 'TLS-certificate-error' });
  });
});

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

describe('egressFetch and friends (local servers on 127.0.0.1)', () => {
  let server: Server;
  let port: number;
  let base: string;
  const seen: Seen[] = [];
  let silent: TcpServer;
  let silentPort: number;
  const silentSockets = new Set<Socket>();
  let closedPort: number;

  beforeAll(async () => {
    server = createHttpServer((request: IncomingMessage, response: ServerResponse) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        seen.push({ method: request.method ?? '', url: request.url ?? '', headers: request.headers, body: Buffer.concat(chunks).toString() });
        const url = new URL(request.url ?? '/', 'http://local');
        switch (url.pathname) {
          case '/redirect':
            response.writeHead(Number(url.searchParams.get('status') ?? '302'), { location: url.searchParams.get('to') ?? '/' });
            response.end('moved');
            return;
          case '/big':
            response.writeHead(200, { 'content-type': 'application/octet-stream' });
            for (let index = 0; index < 64; index++) response.write(Buffer.alloc(1024, 97));
            response.end();
            return;
          case '/big-declared':
            response.writeHead(200, { 'content-length': String(64 * 1024) });
            response.end(Buffer.alloc(64 * 1024, 98));
            return;
          case '/loop':
            response.writeHead(301, { location: '/loop' });
            response.end();
            return;
          case '/hang':
            return; // never answers
          case '/stall':
            response.writeHead(200, { 'content-type': 'text/plain' });
            response.write('first chunk');
            return; // never finishes
          case '/cookies':
            response.writeHead(200, [['set-cookie', 'a=1'], ['set-cookie', 'b=2'], ['x-one', 'yes']]);
            response.end('ok');
            return;
          default:
            response.writeHead(200, { 'content-type': 'application/json' });
            response.end(JSON.stringify({ host: request.headers.host, method: request.method, path: request.url }));
        }
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
    base = `http://127.0.0.1:${port}`;

    // Accepts TCP connections and never says a word (no TLS handshake either).
    silent = createTcpServer((socket) => {
      silentSockets.add(socket);
      socket.on('close', () => silentSockets.delete(socket));
      socket.on('error', () => undefined);
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    silentPort = (silent.address() as AddressInfo).port;

    // A port nothing listens on.
    const probe = createTcpServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    closedPort = (probe.address() as AddressInfo).port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
  });

  afterAll(async () => {
    server.closeAllConnections();
    for (const socket of silentSockets) socket.destroy();
    await Promise.all([
      new Promise<void>((resolve) => server.close(() => resolve())),
      new Promise<void>((resolve) => silent.close(() => resolve())),
    ]);
  });

  it('reaches an allowlisted 127.0.0.1 under EGRESS_RESTRICTED', async () => {
    const response = await egressFetch(get(`${base}/hello?x=1#frag`), checker('EGRESS_RESTRICTED', ['127.0.0.1']));
    expect(response.status).toBe(200);
    expect(response.address).toBe('127.0.0.1');
    expect(JSON.parse(new TextDecoder().decode(response.body))).toEqual({ host: `127.0.0.1:${port}`, method: 'GET', path: '/hello?x=1' });
    expect(response.headers).toContainEqual(['content-type', 'application/json']);
    expect(response.body).toBeInstanceOf(Uint8Array);
  });

  it('reaches localhost:<port> allowlisted under EGRESS_RESTRICTED, and anything under FULL_ACCESS', async () => {
    const restricted = checker('EGRESS_RESTRICTED', [`localhost:${port}`]);
    expect((await egressFetch(get(`http://localhost:${port}/`), restricted)).status).toBe(200);
    const full = checker('FULL_ACCESS');
    const response = await egressFetch(get(`${base}/`), full);
    expect(response).toMatchObject({ status: 200, address: '127.0.0.1' });
  });

  it('connects to the checked address, with the URL\'s host in the Host header', async () => {
    const pinned = checker('EGRESS_RESTRICTED', ['pinned.test']);
    const response = await egressFetch(get(`http://pinned.test:${port}/pin`, { headers: [['Host', 'evil.test'], ['Proxy-Authorization', 'Basic eDp5'], ['X-Custom', 'kept']] }), pinned);
    expect(response.address).toBe('127.0.0.1');
    expect(JSON.parse(new TextDecoder().decode(response.body))).toMatchObject({ host: `pinned.test:${port}`, path: '/pin' });
    const request = seen.findLast((entry) => entry.url === '/pin');
    expect(request?.headers.host).toBe(`pinned.test:${port}`);
    expect(request?.headers['x-custom']).toBe('kept');
    // No proxy is ever in the path: a proxy credential would only leak to the origin.
    expect(request?.headers['proxy-authorization']).toBeUndefined();
  });

  it('sends the method, headers and body', async () => {
    const body = new TextEncoder().encode('{"a":1}');
    const response = await egressFetch(
      { method: 'POST', url: `${base}/post`, headers: [['content-type', 'application/json'], ['content-length', '999'], ['x-multi', 'a'], ['x-multi', 'b']], body },
      checker('FULL_ACCESS'),
    );
    expect(response.status).toBe(200);
    const request = seen.findLast((entry) => entry.url === '/post');
    expect(request).toMatchObject({ method: 'POST', body: '{"a":1}' });
    expect(request?.headers['content-length']).toBe('7');
    expect(request?.headers['x-multi']).toBe('a, b');
  });

  it('returns repeated response headers as separate pairs', async () => {
    const response = await egressFetch(get(`${base}/cookies`), checker('FULL_ACCESS'));
    expect(response.headers.filter(([name]) => name === 'set-cookie')).toEqual([['set-cookie', 'a=1'], ['set-cookie', 'b=2']]);
  });

  it('refuses under DENY_ALL and EGRESS_UNRESTRICTED with the right wasi codes, without connecting', async () => {
    const before = seen.length;
    const deny = await failure(egressFetch(get(`${base}/`), checker('DENY_ALL')));
    expect(wasiHttpErrorCodeOf(deny)).toEqual({ tag: 'HTTP-request-denied' });
    expect(deny.kind).toBe('denied');
    expect(deny.toolhostCode).toBe('NETWORK_DENIED');
    expect(deny.code).toBe('NETWORK_DENIED');
    expect(deny).toBeInstanceOf(ToolhostError);
    expect(deny.decision?.cause).toBe('label');

    const open = await failure(egressFetch(get(`${base}/`), checker('EGRESS_UNRESTRICTED')));
    expect(wasiHttpErrorCodeOf(open)).toEqual({ tag: 'destination-IP-prohibited' });
    expect(open.toolhostCode).toBe('NETWORK_DENIED');

    const named = await failure(egressFetch(get(`http://localhost:${port}/`), checker('EGRESS_UNRESTRICTED')));
    expect(wasiHttpErrorCodeOf(named)).toEqual({ tag: 'destination-IP-prohibited' });

    const restricted = await failure(egressFetch(get(`${base}/`), checker('EGRESS_RESTRICTED', ['127.0.0.2'])));
    expect(wasiHttpErrorCodeOf(restricted)).toEqual({ tag: 'HTTP-request-denied' });

    const scheme = await failure(egressFetch(get('ftp://127.0.0.1/'), checker('FULL_ACCESS')));
    expect(wasiHttpErrorCodeOf(scheme)).toEqual({ tag: 'HTTP-request-denied' });
    expect(seen.length).toBe(before);
  });

  it('maps DNS failures and malformed requests to their wasi codes', async () => {
    const dns = await failure(egressFetch(get('http://nowhere.test/'), checker('FULL_ACCESS')));
    expect(wasiHttpErrorCodeOf(dns)).toEqual({ tag: 'DNS-error', val: { rcode: 'ENOTFOUND', infoCode: undefined } });
    expect(dns.toolhostCode).toBe('TOOL_ERROR');
    expect(dns.details).toMatchObject({ code: 'dns-error' });
    expect(dns.failure).toEqual({ kind: 'dns-error', rcode: 'ENOTFOUND' });
    const slow = new EgressChecker({ label: 'FULL_ACCESS', allow: [] }, { resolve: () => new Promise(() => undefined), dnsTimeoutMs: 30 });
    expect(wasiHttpErrorCodeOf(await failure(egressFetch(get('http://slow.test/'), slow)))).toEqual({ tag: 'DNS-timeout' });
    expect(wasiHttpErrorCodeOf(await failure(egressFetch(get('http://'), checker('FULL_ACCESS'))))).toEqual({ tag: 'HTTP-request-URI-invalid' });
    expect(wasiHttpErrorCodeOf(await failure(egressFetch(get(`http://user:pw@127.0.0.1:${port}/`), checker('FULL_ACCESS'))))).toEqual({ tag: 'HTTP-request-URI-invalid' });
    expect(wasiHttpErrorCodeOf(await failure(egressFetch({ ...get(`${base}/`), method: 'GE T' }, checker('FULL_ACCESS'))))).toEqual({ tag: 'HTTP-request-method-invalid' });
    expect(wasiHttpErrorCodeOf(await failure(egressFetch({ ...get(`${base}/`), method: 'CONNECT' }, checker('FULL_ACCESS'))))).toEqual({ tag: 'HTTP-request-method-invalid' });
  });

  it('returns a 302 as is', async () => {
    const response = await egressFetch(get(`${base}/redirect?to=/elsewhere`), checker('FULL_ACCESS'));
    expect(response.status).toBe(302);
    expect(response.headers).toContainEqual(['location', '/elsewhere']);
    expect(new TextDecoder().decode(response.body)).toBe('moved');
  });

  it('followRedirects follows allowed hops and re-checks each one', async () => {
    const allow = checker('EGRESS_RESTRICTED', ['127.0.0.1']);
    const response = await followRedirects(get(`${base}/redirect?to=${encodeURIComponent('/redirect?to=/final')}`), allow);
    expect(response.status).toBe(200);
    expect(response.url).toBe(`${base}/final`);
    expect(response.redirects).toEqual([`${base}/redirect?to=${encodeURIComponent('/redirect?to=/final')}`, `${base}/redirect?to=/final`]);

    // To 127.0.0.2 (not allowlisted): refused by policy, so no connection was tried.
    const away = await failure(followRedirects(get(`${base}/redirect?to=${encodeURIComponent(`http://127.0.0.2:${port}/`)}`), allow));
    expect(wasiHttpErrorCodeOf(away)).toEqual({ tag: 'HTTP-request-denied' });
    expect(away.url).toBe(`http://127.0.0.2:${port}/`);

    // To the metadata address, from a server allowlisted under EGRESS_UNRESTRICTED.
    const open = checker('EGRESS_UNRESTRICTED', ['127.0.0.1']);
    const metadata = await failure(followRedirects(get(`${base}/redirect?to=${encodeURIComponent('http://169.254.169.254/latest/meta-data/')}`), open));
    expect(wasiHttpErrorCodeOf(metadata)).toEqual({ tag: 'destination-IP-prohibited' });
    expect(metadata.decision?.address).toBe('169.254.169.254');

    // To another scheme.
    const file = await failure(followRedirects(get(`${base}/redirect?to=${encodeURIComponent('file:///etc/passwd')}`), allow));
    expect(wasiHttpErrorCodeOf(file)).toEqual({ tag: 'HTTP-request-denied' });
  });

  it('followRedirects drops credentials across origins, rewrites 303 to GET and stops loops', async () => {
    const both = checker('EGRESS_RESTRICTED', ['127.0.0.1', 'other.test']);
    const headers: Array<[string, string]> = [['Authorization', 'Bearer secret'], ['Cookie', 'sid=1'], ['X-Trace', 't1']];
    const same = await followRedirects(get(`${base}/redirect?to=/same-origin`, { headers }), both);
    expect(same.status).toBe(200);
    expect(seen.findLast((entry) => entry.url === '/same-origin')?.headers).toMatchObject({ authorization: 'Bearer secret', cookie: 'sid=1' });

    const cross = await followRedirects(get(`${base}/redirect?to=${encodeURIComponent(`http://other.test:${port}/cross-origin`)}`, { headers }), both);
    expect(cross.url).toBe(`http://other.test:${port}/cross-origin`);
    const crossed = seen.findLast((entry) => entry.url === '/cross-origin');
    expect(crossed?.headers.authorization).toBeUndefined();
    expect(crossed?.headers.cookie).toBeUndefined();
    expect(crossed?.headers['x-trace']).toBe('t1');
    expect(crossed?.headers.host).toBe(`other.test:${port}`);

    const posted = await followRedirects(
      { method: 'POST', url: `${base}/redirect?status=303&to=/after-post`, headers: [['content-type', 'text/plain']], body: new TextEncoder().encode('data') },
      both,
    );
    expect(posted.status).toBe(200);
    expect(seen.findLast((entry) => entry.url === '/after-post')).toMatchObject({ method: 'GET', body: '' });

    const kept = await followRedirects({ method: 'PUT', url: `${base}/redirect?status=307&to=/after-put`, headers: [], body: new TextEncoder().encode('again') }, both);
    expect(kept.status).toBe(200);
    expect(seen.findLast((entry) => entry.url === '/after-put')).toMatchObject({ method: 'PUT', body: 'again' });

    const loop = await failure(followRedirects(get(`${base}/loop`), both, 3));
    expect(wasiHttpErrorCodeOf(loop)).toEqual({ tag: 'loop-detected' });
  });

  it('caps the body: a declared length fails before reading, a streamed one while reading', async () => {
    const full = checker('FULL_ACCESS');
    const declared = await failure(egressFetch(get(`${base}/big-declared`, { maxBodyBytes: 1000 }), full));
    expect(wasiHttpErrorCodeOf(declared)).toEqual({ tag: 'HTTP-response-body-size', val: 65536n });
    expect(declared.failure).toEqual({ kind: 'body-too-large', size: 65536n, limit: 1000 });
    expect(declared.toolhostCode).toBe('TOOL_ERROR');
    const streamed = await failure(egressFetch(get(`${base}/big`, { maxBodyBytes: 10_000 }), full));
    expect(wasiHttpErrorCodeOf(streamed).tag).toBe('HTTP-response-body-size');
    expect(wasiHttpErrorCodeOf(streamed)).toMatchObject({ val: expect.any(BigInt) });
    const fits = await egressFetch(get(`${base}/big`, { maxBodyBytes: 64 * 1024 }), full);
    expect(fits.body.byteLength).toBe(64 * 1024);
  });

  it('streams a body in chunks and can be closed early', async () => {
    const full = checker('FULL_ACCESS');
    const response = await egressStream(get(`${base}/big`), full);
    expect(response.status).toBe(200);
    let total = 0;
    for await (const chunk of response.body) total += chunk.byteLength;
    expect(total).toBe(64 * 1024);

    const early = await egressStream(get(`${base}/big`), full);
    for await (const chunk of early.body) {
      expect(chunk.byteLength).toBeGreaterThan(0);
      break;
    }
    await early.body.close();

    const unread = await egressStream(get(`${base}/big`), full);
    await unread.body.close();
    await unread.body.close();

    const redirected = await followRedirectsStream(get(`${base}/redirect?to=/big`), full);
    let count = 0;
    for await (const chunk of redirected.body) count += chunk.byteLength;
    expect(count).toBe(64 * 1024);
    expect(redirected.redirects).toHaveLength(1);
  });

  it('reports a closed port as connection-refused', async () => {
    const error = await failure(egressFetch(get(`http://127.0.0.1:${closedPort}/`), checker('FULL_ACCESS')));
    expect(wasiHttpErrorCodeOf(error)).toEqual({ tag: 'connection-refused' });
    expect(error.toolhostCode).toBe('TOOL_ERROR');
  });

  it('times out: no response headers, a stalled body, a connection that never completes', async () => {
    const full = checker('FULL_ACCESS');
    // Three independent requests, each waiting out its own timeout: at once.
    const started = Date.now();
    const [hang, stall, connect] = await Promise.all([
      failure(egressFetch(get(`${base}/hang`, { firstByteTimeoutMs: 200 }), full)),
      failure(egressFetch(get(`${base}/stall`, { betweenBytesTimeoutMs: 200 }), full)),
      // https to a server that accepts TCP but never does the TLS handshake.
      failure(egressFetch(get(`https://pinned.test:${silentPort}/`, { connectTimeoutMs: 300 }), checker('EGRESS_RESTRICTED', ['pinned.test']))),
    ]);
    expect(wasiHttpErrorCodeOf(hang)).toEqual({ tag: 'HTTP-response-timeout' });
    expect(wasiHttpErrorCodeOf(stall)).toEqual({ tag: 'connection-read-timeout' });
    expect(wasiHttpErrorCodeOf(connect)).toEqual({ tag: 'connection-timeout' });
    expect(Date.now() - started).toBeLessThan(5000);
  });


  it('aborts on the signal', async () => {
    const controller = new AbortController();
    const pending = egressFetch(get(`${base}/hang`, { signal: controller.signal }), checker('FULL_ACCESS'));
    setTimeout(() => controller.abort(new Error('stop')), 50);
    const error = await failure(pending);
    expect(wasiHttpErrorCodeOf(error)).toEqual({ tag: 'internal-error', val: 'request aborted' });
    expect(error.cause).toEqual(new Error('stop'));

    const already = await failure(egressFetch(get(`${base}/`, { signal: AbortSignal.abort() }), checker('FULL_ACCESS')));
    expect(wasiHttpErrorCodeOf(already).tag).toBe('internal-error');
  });

  it('EgressError is recognised by instanceof, and other ToolhostErrors are not EgressErrors', () => {
    const plain = new ToolhostError('TOOL_ERROR', 'x');
    expect(plain instanceof EgressError).toBe(false);
    const egress = new EgressError({ kind: 'connection-refused' }, 'refused', { url: 'http://x/' });
    expect(egress instanceof EgressError).toBe(true);
    expect(egress instanceof ToolhostError).toBe(true);
    expect(egress.toData()).toEqual({ code: 'TOOL_ERROR', message: 'refused', details: { code: 'connection-refused', url: 'http://x/' } });
  });
});
