// Component `net`: outgoing HTTP for toolhost, under the call's network policy.
//
// Built with componentize-js with its `http` feature on, so `fetch()` goes out
// through wasi:http. The host sends every request from its main thread through
// the egress checker: under DENY_ALL (the default) every request is refused,
// and the tool reports NETWORK_DENIED; under EGRESS_RESTRICTED only the tool's
// allowlisted hosts answer.
//
// `call` returns a promise: componentize-js runs the guest's event loop until
// it settles, which is how a synchronous WIT export can await fetch().
//
// The 0.2.0 world (wit/v0.2/tool.wit) through defineMcpComponent: a title and the author's annotations; the
// result is the same JSON value as in 0.1.0. (The host lists http_get as not read-only whenever its grant
// allows a network: a GET may still change something on the other side.)

import { progress } from 'toolhost:tool/host@0.2.0';
import { defineMcpComponent } from '../js-sdk/mcp.js';
import { parseArgs, requireString, toolError } from '../js-sdk/toolkit.js';

const DEFAULT_MAX_BYTES = 256 * 1024;

async function httpGet(argsText) {
  const args = parseArgs(argsText, ['url', 'headers', 'max_bytes']);
  const url = requireString(args, 'url');
  let parsed;
  try {
    parsed = new URL(url);
  } catch {
    throw toolError('INVALID_URL', `not a URL: ${url}`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw toolError('INVALID_URL', `only http and https URLs are supported, not ${parsed.protocol}`);
  }
  const maxBytes = Number.isInteger(args.max_bytes) ? args.max_bytes : DEFAULT_MAX_BYTES;
  progress(undefined, `GET ${parsed.origin}${parsed.pathname}`);
  let response;
  try {
    response = await fetch(parsed.href, { headers: args.headers ?? {}, redirect: 'manual' });
  } catch (e) {
    // The host's refusal (HTTP-request-denied) and connection failures land here.
    throw toolError('FETCH_FAILED', `GET ${parsed.href} failed: ${e && e.message ? e.message : String(e)}`);
  }
  const bytes = new Uint8Array(await response.arrayBuffer());
  const truncated = bytes.length > maxBytes;
  const body = new TextDecoder().decode(truncated ? bytes.subarray(0, maxBytes) : bytes);
  const headers = {};
  response.headers.forEach((value, name) => {
    headers[name] = value;
  });
  progress(100, `${response.status}`);
  return JSON.stringify({ url: parsed.href, status: response.status, headers, body, truncated });
}

const TOOLS = [
  {
    name: 'http_get',
    title: 'HTTP GET',
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: true },
    description: 'Fetch a URL with HTTP GET and return its status, headers and body (text). Redirects are returned, not followed.',
    inputSchema: {
      type: 'object',
      properties: {
        url: { type: 'string', description: 'An http or https URL.' },
        headers: { type: 'object', additionalProperties: { type: 'string' }, description: 'Request headers.' },
        max_bytes: { type: 'integer', minimum: 0, description: `Return at most this many bytes of the body (default ${DEFAULT_MAX_BYTES}).` },
      },
      required: ['url'],
      additionalProperties: false,
    },
    outputSchema: {
      type: 'object',
      properties: {
        url: { type: 'string' },
        status: { type: 'integer' },
        headers: { type: 'object', additionalProperties: { type: 'string' } },
        body: { type: 'string' },
        truncated: { type: 'boolean' },
      },
      required: ['url', 'status', 'headers', 'body', 'truncated'],
    },
    streaming: false,
    idempotent: true,
    run: httpGet,
  },
];

export const tool = defineMcpComponent('net', TOOLS);
