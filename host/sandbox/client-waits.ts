/**
 * Workers held by calls that wait for their client: a 0.2.0 guest's `sample`
 * and `elicit` block its worker until the client answers (on 2026-07-28 the
 * call is parked until the client's retry), and how long that takes the
 * client decides, up to the call's wall budget. This is the one place that
 * decides whether a guest may start such a wait.
 *
 * Guarantees:
 * - At most `max` workers of the pool wait for clients at once (default: all
 *   workers but one, at least one), so calls that do not wait keep a worker
 *   whatever clients do (with one worker, the one wait may hold it).
 * - One principal holds at most `perPrincipal` of those places (default: half,
 *   rounded up), so a principal that never answers cannot take every place;
 *   the key is the authenticated principal (`ctx.principal`), never a name the
 *   client chooses; calls with no principal share one key.
 * - Past either limit the request is refused at once with OVERLOADED (its
 *   details name the limit): the guest gets it as its request's error, its
 *   call goes on, and nothing waits in a queue.
 *
 * Does not: make a wait free (a waiting worker runs nothing else; waiting uses
 * no CPU, so a host whose clients answer slowly can run more workers than
 * cores, `host.pool.threads`), or bound how long one wait lasts (the call's
 * wall budget does).
 */
import { ToolhostError } from '../base/errors.js';

/** The `host.pool` keys of the two limits (the names limit hits and refusals carry). */
export type ClientWaitLimit = 'client_waits' | 'client_waits_per_principal';

export interface ClientWaitLimits {
  /** Workers that may wait for clients at once. */
  max: number;
  /** Of those, what one principal may hold. */
  perPrincipal: number;
}

/** The default limits for a pool of `threads` workers (see the header); `max`: the total, when it is set. */
export function defaultClientWaits(threads: number, max = Math.max(1, threads - 1)): ClientWaitLimits {
  return { max, perPrincipal: Math.ceil(max / 2) };
}

/** The key calls with no authenticated principal share. */
const NO_PRINCIPAL = '';

export class ClientWaits {
  readonly limits: ClientWaitLimits;
  /** Places held, by principal (only principals holding one: at most `max` entries). */
  readonly #held = new Map<string, number>();
  #total = 0;

  constructor(limits: ClientWaitLimits) {
    for (const [key, value] of Object.entries(limits)) {
      if (!Number.isInteger(value) || value < 1) throw new TypeError(`client wait limit ${key} must be a positive integer`);
    }
    this.limits = limits;
  }

  /** Workers waiting for clients now. */
  get waiting(): number {
    return this.#total;
  }

  /**
   * Take a place for one wait of `principal`'s call; the refusal (OVERLOADED,
   * `details.limit` the key) when there is none. Every place taken is given
   * back with `leave`, once.
   */
  enter(principal: string | undefined, callId?: string): ToolhostError | undefined {
    const key = principal ?? NO_PRINCIPAL;
    const mine = this.#held.get(key) ?? 0;
    if (this.#total >= this.limits.max) return this.#refusal('client_waits', this.limits.max, callId);
    if (mine >= this.limits.perPrincipal) return this.#refusal('client_waits_per_principal', this.limits.perPrincipal, callId);
    this.#held.set(key, mine + 1);
    this.#total += 1;
    return undefined;
  }

  /** One call's view: its places, all given back by `close` when the call's run ends, whatever its requests did. */
  forCall(principal: string | undefined, callId: string): CallClientWaits {
    return new CallClientWaits(this, principal, callId);
  }

  leave(principal: string | undefined): void {
    const key = principal ?? NO_PRINCIPAL;
    const mine = this.#held.get(key);
    if (mine === undefined) return;
    if (mine <= 1) this.#held.delete(key);
    else this.#held.set(key, mine - 1);
    this.#total -= 1;
  }

  #refusal(limit: ClientWaitLimit, max: number, callId: string | undefined): ToolhostError {
    const whose = limit === 'client_waits' ? 'the sandbox\'s workers that may wait for a client are all waiting' : 'this caller\'s calls already hold every worker it may keep waiting for a client';
    return new ToolhostError('OVERLOADED', `${whose} (${max}, host.pool.${limit}); answer or end those requests, or try again later`, {
      details: { limit, max },
      ...(callId === undefined ? {} : { callId }),
    });
  }
}

/**
 * The places one call holds. A request's place is given back when its answer
 * comes, and every place left when the call's run ends (`close`): a call ended
 * at its wall budget while its guest waited must not keep its place.
 */
export class CallClientWaits {
  readonly #waits: ClientWaits;
  readonly #principal: string | undefined;
  readonly #callId: string;
  #held = 0;
  #closed = false;

  constructor(waits: ClientWaits, principal: string | undefined, callId: string) {
    this.#waits = waits;
    this.#principal = principal;
    this.#callId = callId;
  }

  /** Take a place for one request; the refusal when there is none (or the call's run has ended). */
  enter(): ToolhostError | undefined {
    if (this.#closed) return new ToolhostError('CANCELLED', 'the call has ended', { callId: this.#callId });
    const refusal = this.#waits.enter(this.#principal, this.#callId);
    if (refusal === undefined) this.#held += 1;
    return refusal;
  }

  /** The request's answer came: give its place back (nothing once the call's places were given back). */
  leave(): void {
    if (this.#held === 0) return;
    this.#held -= 1;
    this.#waits.leave(this.#principal);
  }

  /** The call's run ended: give back every place it still holds; later requests are refused. */
  close(): void {
    this.#closed = true;
    while (this.#held > 0) this.leave();
  }
}
