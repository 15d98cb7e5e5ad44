/**
 * A local OAuth authorization server for tests: keys made with jose, its RFC
 * 8414 metadata and JWKS served on 127.0.0.1 (an ephemeral port), and tokens
 * minted for any claims. `rotate` changes the published key set.
 */
import { createHash, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, exportSPKI, generateKeyPair, SignJWT, UnsecuredJWT, type CryptoKey, type JWK, type JWTPayload } from 'jose';

export interface SigningKey {
  kid: string;
  alg: 'RS256' | 'ES256';
  privateKey: CryptoKey;
  publicJwk: JWK;
  /** The public key as SPKI PEM (what an HMAC-confusion attacker uses as the secret). */
  publicPem: string;
}

export async function makeKey(kid: string, alg: 'RS256' | 'ES256'): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  const publicJwk = { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' };
  return { kid, alg, privateKey, publicJwk, publicPem: await exportSPKI(publicKey) };
}

export interface TestAuthorizationServer {
  readonly issuer: string;
  /** JWKS requests answered so far. */
  readonly jwksFetches: number;
  /** Metadata requests answered so far. */
  readonly metadataFetches: number;
  /** Publish these keys from now on. */
  rotate(keys: SigningKey[]): void;
  /** A token signed by `key` (default the first published), with default claims overridden by `claims` (undefined removes one). */
  token(claims: Record<string, unknown>, key?: SigningKey): Promise<string>;
  /** The same, with the header's `typ` set to `typ` (undefined: none) instead of `at+jwt`. */
  tokenTyped(claims: Record<string, unknown>, typ: string | undefined): Promise<string>;
  /** The same claims, `alg: none`. */
  unsigned(claims: Record<string, unknown>): string;
  /** An opaque token whose introspection answers these claims (default ones overridden; `active: false` makes it inactive). */
  opaque(claims: Record<string, unknown>): string;
  /** The scopes asked for at the authorization endpoint, in order (the authorization-code flow, any client, auto-approved). */
  readonly authorizations: readonly string[];
  /** Introspection requests answered so far (with the right client credentials). */
  readonly introspections: number;
  /** The most introspection requests it held at once. */
  readonly peakIntrospections: number;
  close(): Promise<void>;
}

/** The client credentials the introspection endpoint accepts (HTTP Basic). */
export const INTROSPECTION_CLIENT = { clientId: 'toolhost rs', clientSecret: 's3cret:+/' };

/** `introspectionDelayMs`: how long each introspection answer is held (so concurrent ones overlap). */
export async function startAuthorizationServer(options: { audience: string; keys: SigningKey[]; introspectionDelayMs?: number }): Promise<TestAuthorizationServer> {
  let keys = options.keys;
  let jwksFetches = 0;
  let metadataFetches = 0;
  let introspections = 0;
  let holding = 0;
  let peakIntrospections = 0;
  let issuer = '';
  const opaqueTokens = new Map<string, Record<string, unknown>>();
  // The authorization-code flow (PKCE S256, auto-approved): codes -> what the token gets.
  const authorizations: string[] = [];
  const codes = new Map<string, { scope: string; challenge: string; redirectUri: string }>();
  const server: Server = createServer((req, res) => {
    const send = (body: unknown): void => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.url === '/introspect' && req.method === 'POST') {
      // RFC 6749 2.3.1: the id and secret are form-encoded, then joined for Basic.
      const basic = Buffer.from(`${encodeURIComponent(INTROSPECTION_CLIENT.clientId)}:${encodeURIComponent(INTROSPECTION_CLIENT.clientSecret)}`).toString('base64');
      if (req.headers.authorization !== `Basic ${basic}`) {
        res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"invalid_client"}');
        return;
      }
      let body = '';
      holding += 1;
      peakIntrospections = Math.max(peakIntrospections, holding);
      req.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
      req.on('end', () => {
        introspections += 1;
        const token = new URLSearchParams(body).get('token') ?? '';
        setTimeout(() => {
          holding -= 1;
          send(opaqueTokens.get(token) ?? { active: false });
        }, options.introspectionDelayMs ?? 0);
      });
      return;
    }
    if (req.url?.startsWith('/authorize?')) {
      const query = new URL(req.url, issuer).searchParams;
      const scope = query.get('scope') ?? '';
      const redirectUri = query.get('redirect_uri') ?? '';
      authorizations.push(scope);
      const code = randomUUID();
      codes.set(code, { scope, challenge: query.get('code_challenge') ?? '', redirectUri });
      const back = new URL(redirectUri);
      back.searchParams.set('code', code);
      if (query.get('state') !== null) back.searchParams.set('state', query.get('state')!);
      res.writeHead(302, { location: back.href }).end();
      return;
    }
    if (req.url === '/token' && req.method === 'POST') {
      let body = '';
      req.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
      req.on('end', () => {
        const form = new URLSearchParams(body);
        const grant = codes.get(form.get('code') ?? '');
        const verifier = form.get('code_verifier') ?? '';
        if (grant === undefined || form.get('grant_type') !== 'authorization_code' || createHash('sha256').update(verifier).digest('base64url') !== grant.challenge) {
          res.writeHead(400, { 'content-type': 'application/json' }).end('{"error":"invalid_grant"}');
          return;
        }
        codes.delete(form.get('code')!);
        const key = keys[0]!;
        void new SignJWT(claimsOf({ scope: grant.scope })).setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'at+jwt' }).sign(key.privateKey)
          .then((accessToken) => send({ access_token: accessToken, token_type: 'Bearer', expires_in: 300, scope: grant.scope }));
      });
      return;
    }
    if (req.url === '/.well-known/oauth-authorization-server') {
      metadataFetches += 1;
      return send({
        issuer,
        jwks_uri: `${issuer}/jwks`,
        token_endpoint: `${issuer}/token`,
        authorization_endpoint: `${issuer}/authorize`,
        response_types_supported: ['code'],
        grant_types_supported: ['authorization_code'],
        code_challenge_methods_supported: ['S256'],
        token_endpoint_auth_methods_supported: ['none'],
      });
    }
    if (req.url === '/jwks') {
      jwksFetches += 1;
      return send({ keys: keys.map((key) => key.publicJwk) });
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const claimsOf = (claims: Record<string, unknown>): JWTPayload => {
    const now = Math.floor(Date.now() / 1000);
    const all: Record<string, unknown> = { iss: issuer, aud: options.audience, sub: 'alice', iat: now, exp: now + 300, ...claims };
    for (const [name, value] of Object.entries(all)) if (value === undefined) delete all[name];
    return all as JWTPayload;
  };
  return {
    issuer,
    get jwksFetches() {
      return jwksFetches;
    },
    get metadataFetches() {
      return metadataFetches;
    },
    get authorizations() {
      return authorizations;
    },
    get introspections() {
      return introspections;
    },
    get peakIntrospections() {
      return peakIntrospections;
    },
    opaque(claims) {
      const token = `opaque-${opaqueTokens.size}-${Math.random().toString(36).slice(2)}`;
      const { exp, ...rest } = claimsOf(claims) as Record<string, unknown>;
      opaqueTokens.set(token, { active: true, ...rest, ...(exp === undefined ? {} : { exp }) });
      return token;
    },
    rotate(next) {
      keys = next;
    },
    token(claims, key = keys[0]!) {
      return new SignJWT(claimsOf(claims)).setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'at+jwt' }).sign(key.privateKey);
    },
    tokenTyped(claims, typ) {
      const key = keys[0]!;
      return new SignJWT(claimsOf(claims)).setProtectedHeader({ alg: key.alg, kid: key.kid, ...(typ === undefined ? {} : { typ }) }).sign(key.privateKey);
    },
    unsigned(claims) {
      return new UnsecuredJWT(claimsOf(claims)).encode();
    },
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
  };
}
