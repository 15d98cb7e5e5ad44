/**
 * Which calls are in flight (cancellable) and which finished recently.
 * The finished ids are remembered up to a number of bytes (the oldest are
 * forgotten first), so no caller can make the host hold more than that.
 *
 * Ids are per principal (principal-scope.ts): every method takes the caller's
 * principal, and sees only that principal's calls (without one: only calls
 * without one). Another principal's id can be neither squatted, nor
 * cancelled, nor learned about (in flight or finished, it is NOT_FOUND).
 */
import { DEFAULT_REMEMBERED_CALL_ID_BYTES } from './call/ids.js';
import { ChurnTable } from './churn-table.js';
import type { CancelOutcome } from '../base/errors.js';
import { callKey, lookupKey } from './principal-scope.js';

/** What remembering one id costs beyond its characters (a Set entry, roughly). */
const ENTRY_OVERHEAD_BYTES = 64;

export class CallTracker {
  /** Calls in flight, by key (a ChurnTable, not a Map: see churn-table.ts). */
  readonly #inFlight = new ChurnTable<string, () => void>();
  /** Finished keys, for lookups. */
  readonly #completed = new Set<string>();
  /**
   * The same ids oldest first, from `#head` on: the order they are forgotten
   * in. (Reading the oldest from the Set itself, `values().next()`, walks
   * past every entry deleted from its front since its last rehash: with a
   * delete per call that was ~1/3 of a native echo's main-thread profile.)
   */
  #order: string[] = [];
  #head = 0;
  readonly #maxBytes: number;
  #bytes = 0;

  constructor(rememberedBytes: number = DEFAULT_REMEMBERED_CALL_ID_BYTES) {
    if (!Number.isInteger(rememberedBytes) || rememberedBytes < 0) throw new TypeError('rememberedBytes must be a non-negative integer');
    this.#maxBytes = rememberedBytes;
  }

  /** Bytes the remembered finished ids take (as counted). */
  get rememberedBytes(): number {
    return this.#bytes;
  }

  /** Track a call (started by `principal`, when a server authenticated its caller); false when the principal's id is already in flight. */
  begin(callId: string, cancel: () => void, principal?: string): boolean {
    const key = callKey(principal, callId);
    // A finished id may be used again; it stays remembered (the call in flight is found first) and is forgotten in its turn.
    if (this.#inFlight.has(key)) return false;
    this.#inFlight.set(key, cancel);
    return true;
  }

  /** The call `callId` of `principal` is over. */
  end(callId: string, principal?: string): void {
    this.#remember(callKey(principal, callId));
  }

  #remember(key: string): void {
    if (!this.#inFlight.delete(key)) return;
    if (this.#completed.has(key)) return;
    this.#completed.add(key);
    this.#order.push(key);
    this.#bytes += cost(key);
    // Drop the oldest until the rest fit.
    while (this.#bytes > this.#maxBytes && this.#head < this.#order.length) {
      const oldest = this.#order[this.#head]!;
      this.#head += 1;
      this.#completed.delete(oldest);
      this.#bytes -= cost(oldest);
    }
    // The forgotten front is cut off once it is most of the array (amortized: each id is copied about once).
    if (this.#head >= 1024 && this.#head * 2 >= this.#order.length) {
      this.#order = this.#order.slice(this.#head);
      this.#head = 0;
    }
  }

  /**
   * Cancel `principal`'s call `callId` (without a principal: the call of that
   * id started without one). A call another principal started with the same
   * id is not looked at: it is not the caller's to cancel, nor to learn about.
   */
  cancel(callId: string, principal?: string): CancelOutcome {
    const key = lookupKey(principal, callId);
    if (key === undefined) return 'NOT_FOUND';
    const cancel = this.#inFlight.get(key);
    if (cancel) {
      cancel();
      return 'CANCELLED';
    }
    return this.#completed.has(key) ? 'ALREADY_COMPLETED' : 'NOT_FOUND';
  }

  /** Whether `principal`'s call `callId` is in flight, finished recently, or unknown (nothing is cancelled). */
  state(callId: string, principal?: string): 'in_flight' | 'completed' | 'unknown' {
    const key = lookupKey(principal, callId);
    if (key === undefined) return 'unknown';
    if (this.#inFlight.has(key)) return 'in_flight';
    return this.#completed.has(key) ? 'completed' : 'unknown';
  }

  get size(): number {
    return this.#inFlight.size;
  }

  /** Cancel every call in flight (used when the host closes). */
  cancelAll(): void {
    for (const cancel of this.#inFlight.values()) cancel();
  }
}

function cost(key: string): number {
  return key.length * 2 + ENTRY_OVERHEAD_BYTES;
}
