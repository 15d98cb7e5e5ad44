/**
 * An HTTP streaming tool's spec, checked once when the tool is made: the URL,
 * the method, the headers (with the defaults the tool adds), limits and the
 * egress allowlist. A bad spec is INVALID_INPUT at once, not at the first call.
 */
import { ToolhostError } from '../base/errors.js';
import type { JsonSchema, ToolGrant } from '../core/tool.js';
import type { ExecutionPolicyInput } from '../policy/execution-policy.js';
import { parseEgressAllowlist } from '../net/allowlist.js';
import type { EgressCheckerOptions } from '../net/egress-checker.js';
import { CLIENT_MANAGED_HEADERS } from '../net/headers.js';
import { DEFAULT_MAX_BODY_BYTES, type EgressRequest } from '../net/pinned-client.js';

export type HttpToolMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** How an HTTP streaming tool is configured (the config file's `http_tools` entries map onto it). */
export interface HttpStreamingToolSpec {
  name: string;
  description: string;
  /** An absolute `http:` or `https:` URL, without credentials. */
  url: string;
  /** Default `POST`. */
  method?: HttpToolMethod;
  /** Sent with every request. `accept` (and `content-type`, `user-agent`) replace the defaults. */
  headers?: Record<string, string>;
  /** Time limit of one request, from sending it to the end of the body (ms). Default: none of its own (the call's budget). */
  timeoutMs?: number;
  /** Longest silence allowed between two pieces of the body (ms). Default 30 000 (or `timeoutMs` when shorter). */
  idleTimeoutMs?: number;
  /**
   * Send the call's W3C trace context (`traceparent`, `tracestate`) with each request when the host traces
   * (default false: the endpoint is a third party unless the operator says otherwise).
   */
  propagateTrace?: boolean;
  /** Default `{ type: 'object' }`. */
  inputSchema?: JsonSchema;
  outputSchema?: JsonSchema;
  /** What the tool may reach: the network label and the egress allowlist. Default: nothing (DENY_ALL). */
  grant?: ToolGrant;
  defaultPolicy?: ExecutionPolicyInput;
  /** Default false. */
  idempotent?: boolean;
  readOnly?: boolean;
  /** Cap on the response body, stream or not (bytes). Default 16 MiB; past it the call fails with HTTP_TOO_LARGE. */
  maxBodyBytes?: number;
  /** Redirects followed (each hop checked). Default 5. */
  maxRedirects?: number;
  /** Certificate authorities to trust for https (default: Node's). */
  ca?: EgressRequest['ca'];
  /** The checker's resolver and DNS timeout (tests inject a resolver). */
  egress?: EgressCheckerOptions;
}

const METHODS: ReadonlySet<string> = new Set(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']);
export const BODY_METHODS: ReadonlySet<string> = new Set(['POST', 'PUT', 'PATCH']);
const ACCEPT = 'text/event-stream, application/x-ndjson, application/jsonl, application/json;q=0.9, */*;q=0.8';
const USER_AGENT = 'toolhost-http-tool';
/** Headers the HTTP client sets itself (framing, the host): configuring them is an error. */
const RESERVED_HEADERS: ReadonlySet<string> = new Set([...CLIENT_MANAGED_HEADERS, 'te', 'trailer']);
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

export interface CheckedSpec {
  url: URL;
  method: HttpToolMethod;
  headers: Array<[string, string]>;
  timeoutMs: number | undefined;
  idleTimeoutMs: number | undefined;
  maxBodyBytes: number;
  maxRedirects: number;
  ca: EgressRequest['ca'];
  egress: EgressCheckerOptions | undefined;
  propagateTrace: boolean;
}

export function invalid(spec: Pick<HttpStreamingToolSpec, 'name'>, message: string): ToolhostError {
  return new ToolhostError('INVALID_INPUT', `HTTP tool "${spec.name}": ${message}`);
}

export function checkSpec(spec: HttpStreamingToolSpec): CheckedSpec {
  let url: URL;
  try {
    url = new URL(spec.url);
  } catch {
    throw invalid(spec, `${JSON.stringify(spec.url)} is not an absolute URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw invalid(spec, `the URL must be http:// or https:// (got ${url.protocol})`);
  if (url.username !== '' || url.password !== '') throw invalid(spec, 'the URL must not carry credentials (send an authorization header)');
  url.hash = '';

  const method = (spec.method ?? 'POST').toUpperCase();
  if (!METHODS.has(method)) throw invalid(spec, `method must be one of ${[...METHODS].join(', ')} (got ${JSON.stringify(spec.method)})`);

  const configured: Array<[string, string]> = [];
  for (const [name, value] of Object.entries(spec.headers ?? {})) {
    if (!TOKEN.test(name)) throw invalid(spec, `${JSON.stringify(name)} is not a valid header name`);
    if (RESERVED_HEADERS.has(name.toLowerCase())) throw invalid(spec, `the ${name} header is set by the HTTP client and cannot be configured`);
    if (typeof value !== 'string' || /[\r\n\0]/.test(value)) throw invalid(spec, `the value of header ${name} must be a string without line breaks`);
    configured.push([name, value]);
  }
  const has = (name: string): boolean => configured.some(([key]) => key.toLowerCase() === name);
  const headers: Array<[string, string]> = [];
  if (BODY_METHODS.has(method) && !has('content-type')) headers.push(['content-type', 'application/json']);
  if (!has('accept')) headers.push(['accept', ACCEPT]);
  if (!has('user-agent')) headers.push(['user-agent', USER_AGENT]);
  headers.push(...configured);

  const positive = (value: number | undefined, what: string): number | undefined => {
    if (value === undefined) return undefined;
    if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) throw invalid(spec, `${what} must be a positive number (got ${String(value)})`);
    return value;
  };
  const maxRedirects = spec.maxRedirects ?? 5;
  if (!Number.isInteger(maxRedirects) || maxRedirects < 0) throw invalid(spec, `maxRedirects must be a non-negative integer (got ${String(spec.maxRedirects)})`);

  // A bad allowlist entry is a configuration error: say so now rather than at every call.
  try {
    parseEgressAllowlist(spec.grant?.egressAllow ?? []);
  } catch (error) {
    throw invalid(spec, error instanceof Error ? error.message : String(error));
  }

  return {
    url,
    method: method as HttpToolMethod,
    headers,
    timeoutMs: positive(spec.timeoutMs, 'timeoutMs'),
    idleTimeoutMs: positive(spec.idleTimeoutMs, 'idleTimeoutMs'),
    maxBodyBytes: positive(spec.maxBodyBytes, 'maxBodyBytes') ?? DEFAULT_MAX_BODY_BYTES,
    maxRedirects,
    ca: spec.ca,
    egress: spec.egress,
    propagateTrace: spec.propagateTrace === true,
  };
}
