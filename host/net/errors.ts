/**
 * Why an outgoing request failed, in network terms: an {@link EgressError}
 * carries one {@link EgressFailure}, a small closed union that names what
 * happened (a policy refusal, a DNS failure, a refused or timed-out
 * connection, a TLS failure, a response that broke a limit or the protocol)
 * with the payload a caller needs.
 *
 * Nothing here knows a transport's vocabulary: the sandbox turns a failure
 * into a wasi:http `error-code` (sandbox/wasi/http-error-code.ts), the native
 * HTTP tool into its own `HTTP_*` codes. Add a kind only together with both
 * mappings (the compiler points at them: their switches are exhaustive).
 */
import { ToolhostError } from '../base/errors.js';
import type { EgressDenied } from './egress-checker.js';

/** What went wrong with an outgoing request. */
export type EgressFailure =
  /** The policy refused the destination: `DENY_ALL`, not allowlisted, or a scheme other than http(s). */
  | { kind: 'denied' }
  /** Every address of the destination is one the policy refuses (non-public, metadata through a name). */
  | { kind: 'prohibited-address' }
  /** The URL does not parse, has no host, or carries credentials. */
  | { kind: 'invalid-url' }
  /** Not an HTTP method token, or `CONNECT`. */
  | { kind: 'invalid-method' }
  | { kind: 'dns-timeout' }
  /** The name did not resolve; `rcode` is the resolver's code (e.g. `ENOTFOUND`, `ENODATA`). */
  | { kind: 'dns-error'; rcode?: string }
  | { kind: 'connection-refused' }
  /** The TCP connection (or the TLS handshake) did not complete in time. */
  | { kind: 'connection-timeout' }
  /** No route to the address (host or network unreachable, address not available). */
  | { kind: 'destination-unreachable' }
  /** The peer closed or reset the connection before the exchange was complete. */
  | { kind: 'connection-terminated' }
  /** The server's certificate was refused (untrusted, expired, wrong name, ...). */
  | { kind: 'tls-certificate-error' }
  /** The TLS handshake failed otherwise. */
  | { kind: 'tls-error' }
  /** No response headers within the first-byte timeout. */
  | { kind: 'response-timeout' }
  /** The response body stalled longer than the between-bytes timeout. */
  | { kind: 'read-timeout' }
  /** The response header section is too large. */
  | { kind: 'headers-too-large' }
  /** The body ended before its declared length. */
  | { kind: 'response-incomplete' }
  /** The response body is (or declares itself) larger than `limit`: `size` is the declared size or what had arrived. */
  | { kind: 'body-too-large'; size: bigint; limit: number }
  /** A malformed response, or a redirect whose `Location` does not parse. */
  | { kind: 'protocol-error' }
  /** More than `limit` redirects. */
  | { kind: 'too-many-redirects'; limit: number }
  /** The caller's signal aborted the request. */
  | { kind: 'aborted' }
  /** Anything else; `message` says what. */
  | { kind: 'internal'; message: string };

/** The failure kinds (the `kind` of an {@link EgressFailure}). */
export type EgressFailureKind = EgressFailure['kind'];

const kEgressError = Symbol.for('toolhost.egress-error');

/**
 * A failed egress request. It is a {@link ToolhostError} whose `code` is
 * {@link EgressError.toolhostCode} (`NETWORK_DENIED` for a policy refusal,
 * `TOOL_ERROR` otherwise, with the failure's kind as `details.code`), so a
 * native tool can let it propagate.
 */
export class EgressError extends ToolhostError {
  /** What happened, with its payload. */
  readonly failure: EgressFailure;
  /** `failure.kind`. */
  readonly kind: EgressFailureKind;
  /** `NETWORK_DENIED` when the policy refused the request, `TOOL_ERROR` for any other failure. */
  readonly toolhostCode: 'NETWORK_DENIED' | 'TOOL_ERROR';
  /** The URL of the failed request. */
  readonly url: string;
  /** The checker's refusal, when the policy (or DNS) stopped the request before any connection. */
  readonly decision: EgressDenied | undefined;
  readonly [kEgressError] = true;

  constructor(failure: EgressFailure, message: string, options: { url: string; decision?: EgressDenied; address?: string; cause?: unknown }) {
    const toolhostCode = isPolicyRefusal(failure) ? 'NETWORK_DENIED' : 'TOOL_ERROR';
    const details: Record<string, unknown> = { code: failure.kind, url: options.url };
    if (options.address !== undefined) details.address = options.address;
    if (options.decision) details.denial = options.decision.cause;
    super(toolhostCode, message, options.cause === undefined ? { details } : { details, cause: options.cause });
    this.name = 'EgressError';
    this.failure = failure;
    this.kind = failure.kind;
    this.toolhostCode = toolhostCode;
    this.url = options.url;
    this.decision = options.decision;
  }

  /** Recognises egress errors across copies of toolhost (a ToolhostError alone is not one). */
  static override [Symbol.hasInstance](value: unknown): boolean {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[kEgressError] === true;
  }
}

/** Whether the failure is the policy's refusal (as opposed to the network failing). */
export function isPolicyRefusal(failure: EgressFailure): boolean {
  return failure.kind === 'denied' || failure.kind === 'prohibited-address';
}

/** The error for a request the checker did not allow. */
export function egressErrorFromDecision(decision: EgressDenied, url: string): EgressError {
  return new EgressError(failureOfDenial(decision), decision.reason, {
    url,
    decision,
    ...(decision.address === undefined ? {} : { address: decision.address }),
  });
}

function failureOfDenial(decision: EgressDenied): EgressFailure {
  switch (decision.cause) {
    case 'invalid-url':
      return { kind: 'invalid-url' };
    case 'scheme':
    case 'label':
    case 'not-allowlisted':
      return { kind: 'denied' };
    case 'prohibited-address':
      return { kind: 'prohibited-address' };
    case 'dns-timeout':
      return { kind: 'dns-timeout' };
    case 'dns-failure':
      return decision.dnsCode === undefined ? { kind: 'dns-error' } : { kind: 'dns-error', rcode: decision.dnsCode };
  }
}
