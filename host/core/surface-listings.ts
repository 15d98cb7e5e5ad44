/**
 * Each component's listings (prompts, resources, templates), kept apart:
 * one component whose listing fails or is slow never fails or holds up
 * another's. What it guarantees:
 * - a listing is asked once and kept until the component is loaded again;
 * - a failed listing (a trap, a tool error, a budget kill, more than
 *   `surface_items` items) is logged, counted (`onLimit(tool,
 *   'surface_listing')`, or `surface_items`) and not asked again before its
 *   backoff ends (5 s, doubling to 5 min); meanwhile the component is left
 *   out of every answer (`undefined`), and the others are served;
 * - a request waits at most `waitMs` for a component's listing
 *   (`guest_limits.surface_listing_wait_ms`); past it the component is left
 *   out of that answer (counted as `surface_listing_wait_ms`) and the listing
 *   goes on: its answer is kept for later requests;
 * - a listing a caller cancelled is not a component's failure: it is
 *   forgotten, not backed off.
 * What it does not do: bound a listing's cost (each is a call of the surface
 * tool, under the component's budgets), or share a slow component's workers
 * (a listing that runs holds a sandbox worker until its budget ends it).
 */
import { ToolhostError } from '../base/errors.js';
import type { Logger } from '../base/logger.js';

export type ListingOp = 'prompts/list' | 'resources/list' | 'resources/templates';

/** How long a request waits for one component's listing, unless configured (ms). */
export const DEFAULT_SURFACE_LISTING_WAIT_MS = 5000;
/** The first backoff after a failed listing, and its ceiling (ms). */
export const LISTING_BACKOFF_MS = Object.freeze({ first: 5000, max: 300_000 });

interface Slot {
  /** The listing being asked. */
  pending?: Promise<unknown[]>;
  /** The listing, once answered. */
  items?: unknown[];
  /** Failures in a row, and when the component may be asked again. */
  failures: number;
  retryAt: number;
}

export interface ListingOptions {
  waitMs: number;
  logger: Logger;
  onLimit: (tool: string, limit: string) => void;
  /** The clock (ms), for tests. */
  now?: () => number;
}

/** One component's listings. */
export class ComponentListings {
  readonly #slots = new Map<ListingOp, Slot>();
  readonly #component: string;
  readonly #tool: string;
  readonly #options: ListingOptions;

  constructor(component: string, tool: string, options: ListingOptions) {
    this.#component = component;
    this.#tool = tool;
    this.#options = options;
  }

  /**
   * The listing, or `undefined` when the component is left out of this answer (failing, backing off, or slower
   * than the wait). `ask` runs the listing (a surface call); `signal` is the request's.
   */
  async get(op: ListingOp, ask: () => Promise<unknown[]>, signal?: AbortSignal): Promise<unknown[] | undefined> {
    const now = this.#options.now ?? Date.now;
    let slot = this.#slots.get(op);
    if (slot?.items) return slot.items;
    if (slot && slot.pending === undefined && now() < slot.retryAt) return undefined;
    if (!slot) {
      slot = { failures: 0, retryAt: 0 };
      this.#slots.set(op, slot);
    }
    if (!slot.pending) slot.pending = this.#ask(slot, op, ask, now, signal);
    const pending = slot.pending;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => {
      timer = setTimeout(() => resolve('late'), this.#options.waitMs);
      timer.unref?.();
    });
    try {
      const answer = await Promise.race([pending.then((items) => items, () => undefined), late]);
      if (answer === 'late') {
        this.#options.onLimit(this.#tool, 'surface_listing_wait_ms');
        this.#options.logger.warn({ component: this.#component, op, waitMs: this.#options.waitMs }, 'surfaces: a component\'s listing is slow; answering without it');
        return undefined;
      }
      return answer;
    } finally {
      clearTimeout(timer);
    }
  }

  #ask(slot: Slot, op: ListingOp, ask: () => Promise<unknown[]>, now: () => number, signal?: AbortSignal): Promise<unknown[]> {
    const pending = ask();
    pending.then((items) => {
      slot.items = items;
      slot.failures = 0;
      slot.pending = undefined;
    }, (error: unknown) => {
      slot.pending = undefined;
      const code = error instanceof ToolhostError ? error.code : undefined;
      if (code === 'CANCELLED' || signal?.aborted === true) return;
      slot.failures++;
      const backoff = Math.min(LISTING_BACKOFF_MS.max, LISTING_BACKOFF_MS.first * 2 ** Math.min(slot.failures - 1, 20));
      slot.retryAt = now() + backoff;
      if (code !== 'OUTPUT_LIMIT_EXCEEDED') this.#options.onLimit(this.#tool, 'surface_listing');
      this.#options.logger.warn({ component: this.#component, op, code: code ?? 'INTERNAL', err: (error as Error)?.message?.slice(0, 200), failures: slot.failures, retryInMs: backoff },
        'surfaces: a component\'s listing failed; left out until its backoff ends');
    });
    return pending;
  }
}
