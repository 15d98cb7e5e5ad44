/**
 * Who a server's request comes from: bearer tokens, each naming a principal.
 *
 * A server may have the one shared token (`bearerToken`, principal
 * {@link SHARED_TOKEN_PRINCIPAL}) and any number of named tokens
 * (`tokens: [{ principal, token }]`). The principal reaches the call path
 * (`CallOptions.principal`), which scopes conversations to it and lets a
 * cancel reach only that principal's calls. MCP HTTP and gRPC use the same
 * table, so one client holding one token is one principal on both.
 *
 * OAuth access tokens sit beside these behind one interface (auth/authenticator.ts).
 *
 * Tokens are compared as SHA-256 digests in constant time, every token every
 * time, so the answer's timing says nothing about which token came close.
 */
import { createHash, timingSafeEqual } from 'node:crypto';

/** A token and the principal it names. */
export interface NamedToken {
  principal: string;
  token: string;
}

/** The principal of the one shared bearer token. */
export const SHARED_TOKEN_PRINCIPAL = 'bearer';

/** Principal names: short, printable, safe in logs and metrics. */
const PRINCIPAL = /^[A-Za-z0-9._@:-]{1,64}$/;

export interface TokenOptions {
  bearerToken?: string | undefined;
  tokens?: NamedToken[] | undefined;
}

export class TokenTable {
  readonly #entries: Array<{ principal: string; digest: Buffer }>;

  private constructor(entries: Array<{ principal: string; digest: Buffer }>) {
    this.#entries = entries;
  }

  /**
   * The table of the configured tokens, or undefined when there are none (the
   * server is open). Throws a TypeError naming the bad option.
   */
  static from(options: TokenOptions): TokenTable | undefined {
    const { bearerToken, tokens } = options;
    if (bearerToken !== undefined && (typeof bearerToken !== 'string' || bearerToken.length === 0)) {
      throw new TypeError('options.bearerToken must be a non-empty string');
    }
    if (tokens !== undefined && !Array.isArray(tokens)) throw new TypeError('options.tokens must be an array of { principal, token }');
    const entries: Array<{ principal: string; digest: Buffer }> = [];
    const seen = new Set<string>();
    const add = (principal: string, token: string, where: string): void => {
      const digested = digest(token).toString('hex');
      if (seen.has(digested)) throw new TypeError(`${where}: the same token is given twice`);
      seen.add(digested);
      entries.push({ principal, digest: digest(token) });
    };
    if (bearerToken !== undefined) add(SHARED_TOKEN_PRINCIPAL, bearerToken, 'options.bearerToken');
    const principals = new Set(bearerToken === undefined ? [] : [SHARED_TOKEN_PRINCIPAL]);
    (tokens ?? []).forEach((entry, i) => {
      const where = `options.tokens[${i}]`;
      if (typeof entry !== 'object' || entry === null) throw new TypeError(`${where} must be { principal, token }`);
      if (typeof entry.principal !== 'string' || !PRINCIPAL.test(entry.principal)) throw new TypeError(`${where}.principal must match ${PRINCIPAL.source}`);
      if (typeof entry.token !== 'string' || entry.token.length === 0) throw new TypeError(`${where}.token must be a non-empty string`);
      if (principals.has(entry.principal)) throw new TypeError(`${where}.principal "${entry.principal}" is taken${entry.principal === SHARED_TOKEN_PRINCIPAL ? ' (by the shared bearer token)' : ''}`);
      principals.add(entry.principal);
      add(entry.principal, entry.token, where);
    });
    return entries.length === 0 ? undefined : new TokenTable(entries);
  }

  /** The principals the table names (an OAuth access token may name none of them). */
  get principals(): string[] {
    return this.#entries.map((entry) => entry.principal);
  }

  /** The principal an `Authorization: Bearer <token>` value names, or undefined when it names none. */
  principalOf(authorization: string | undefined): string | undefined {
    const match = typeof authorization === 'string' ? /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization) : null;
    const presented = digest(match?.[1] ?? '');
    let found: string | undefined;
    for (const entry of this.#entries) {
      if (timingSafeEqual(presented, entry.digest) && found === undefined) found = entry.principal;
    }
    return match === null ? undefined : found;
  }
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}
