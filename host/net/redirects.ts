/**
 * Following redirects for native tools: every hop goes through the checker
 * again (a redirect cannot lead past the policy), credentials are dropped when
 * the origin changes, and a 303 (or a 301/302 after a POST) continues as GET.
 * Guests never get this: their client sees the 3xx, as wasi:http specifies.
 */
import type { EgressChecker } from './egress-checker.js';
import { EgressError } from './errors.js';
import { egressFetch, egressStream, type EgressRequest, type EgressResponse, type EgressStreamResponse } from './pinned-client.js';

/** A response after {@link followRedirects}: `url` is the final URL, `redirects` the URLs that answered 3xx. */
export type RedirectedResponse<R> = R & { redirects: string[] };

/**
 * Follow redirects (301, 302, 303, 307, 308 with a `Location`) for at most
 * `maxHops` hops, checking every hop with the checker before connecting.
 * 303, and 301/302 after a POST, continue as GET without a body; 307 and 308
 * keep the method and body. When the origin changes, `authorization`,
 * `proxy-authorization` and `cookie` are dropped.
 *
 * @throws EgressError as {@link egressFetch}; `too-many-redirects` past
 *   `maxHops`; `protocol-error` for an unparsable `Location`.
 */
export async function followRedirects(request: EgressRequest, checker: EgressChecker, maxHops = 5): Promise<RedirectedResponse<EgressResponse>> {
  return redirectLoop(request, checker, maxHops, egressFetch, async () => undefined);
}

/** {@link followRedirects} with a streamed final body (the bodies of the 3xx answers are discarded). */
export async function followRedirectsStream(request: EgressRequest, checker: EgressChecker, maxHops = 5): Promise<RedirectedResponse<EgressStreamResponse>> {
  return redirectLoop(request, checker, maxHops, egressStream, (response) => response.body.close());
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const CREDENTIAL_HEADERS = new Set(['authorization', 'proxy-authorization', 'cookie']);
const BODY_HEADERS = new Set(['content-type', 'content-encoding', 'content-language', 'content-location']);

async function redirectLoop<R extends { status: number; headers: Array<[string, string]>; url: string }>(
  request: EgressRequest,
  checker: EgressChecker,
  maxHops: number,
  send: (request: EgressRequest, checker: EgressChecker) => Promise<R>,
  discard: (response: R) => Promise<void>,
): Promise<RedirectedResponse<R>> {
  const redirects: string[] = [];
  let current = request;
  for (;;) {
    const response = await send(current, checker);
    const location = response.headers.find(([name]) => name === 'location')?.[1];
    if (!REDIRECTS.has(response.status) || location === undefined) return Object.assign(response, { redirects });
    await discard(response);
    if (redirects.length >= maxHops) {
      throw new EgressError({ kind: 'too-many-redirects', limit: maxHops }, `more than ${maxHops} redirects (last from ${current.url})`, { url: current.url });
    }
    let next: URL;
    try {
      next = new URL(location, current.url);
    } catch {
      throw new EgressError({ kind: 'protocol-error' }, `invalid redirect location ${JSON.stringify(location)} from ${current.url}`, { url: current.url });
    }
    next.hash = '';
    redirects.push(current.url);
    const method = current.method.toUpperCase();
    const toGet = response.status === 303 ? method !== 'HEAD' : (response.status === 301 || response.status === 302) && method === 'POST';
    const crossOrigin = new URL(current.url).origin !== next.origin;
    const headers = current.headers.filter(([name]) => {
      const lower = name.toLowerCase();
      return !(crossOrigin && CREDENTIAL_HEADERS.has(lower)) && !(toGet && BODY_HEADERS.has(lower));
    });
    const { body, ...rest } = current;
    current = { ...rest, method: toGet ? 'GET' : current.method, url: next.href, headers, ...(toGet || body === undefined ? {} : { body }) };
  }
}
