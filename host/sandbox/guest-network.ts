/**
 * A guest's outgoing HTTP, sent from the main thread through the egress
 * checker under the call's network label, connecting to the address the
 * checker approved. Failures reach the guest as wasi:http error codes;
 * refusals are remembered for the call's accounting.
 */
import type { ToolContext } from '../core/context.js';
import { parseEgressAllowlist } from '../net/allowlist.js';
import { EgressChecker } from '../net/egress-checker.js';
import { EgressError } from '../net/errors.js';
import { wasiHttpErrorCodeOf } from './wasi/http-error-code.js';
import type { GuestHttpRequest, GuestHttpResult } from './wasi/http.js';

export class GuestNetwork {
  readonly denied: Array<{ url: string; reason: string }> = [];
  readonly #ctx: ToolContext;
  readonly #signal: AbortSignal;
  #checker: EgressChecker | undefined;

  constructor(ctx: ToolContext, signal: AbortSignal) {
    this.#ctx = ctx;
    this.#signal = signal;
  }

  async send(request: GuestHttpRequest): Promise<GuestHttpResult> {
    const url = `${request.scheme}://${request.authority}${request.pathWithQuery.startsWith('/') ? '' : '/'}${request.pathWithQuery}`;
    this.#checker ??= new EgressChecker({
      label: this.#ctx.capabilities.network,
      allow: parseEgressAllowlist(this.#ctx.capabilities.egressAllow),
    });
    const decoder = new TextDecoder();
    try {
      // The HTTP client (undici) loads with a guest's first request, not with every host.
      const { egressFetch } = await import('../net/pinned-client.js');
      const response = await egressFetch(
        {
          method: request.method,
          url,
          headers: request.headers.map(([name, value]): [string, string] => [name, decoder.decode(value)]),
          ...(request.body.length > 0 ? { body: request.body } : {}),
          ...(request.connectTimeoutMs === undefined ? {} : { connectTimeoutMs: request.connectTimeoutMs }),
          ...(request.firstByteTimeoutMs === undefined ? {} : { firstByteTimeoutMs: request.firstByteTimeoutMs }),
          ...(request.betweenBytesTimeoutMs === undefined ? {} : { betweenBytesTimeoutMs: request.betweenBytesTimeoutMs }),
          signal: this.#signal,
        },
        this.#checker,
      );
      const encoder = new TextEncoder();
      return { ok: true, status: response.status, headers: response.headers.map(([name, value]): [string, Uint8Array] => [name, encoder.encode(value)]), body: response.body };
    } catch (error) {
      if (error instanceof EgressError) {
        if (error.toolhostCode === 'NETWORK_DENIED') this.denied.push({ url, reason: error.message });
        return { ok: false, error: wasiHttpErrorCodeOf(error) };
      }
      return { ok: false, error: { tag: 'internal-error', val: error instanceof Error ? error.message : String(error) } };
    }
  }
}
