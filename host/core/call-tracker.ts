/**
 * Which calls are in flight (cancellable) and which finished recently.
 * The finished ids are remembered up to a number of bytes (the oldest are
 * forgotten first), so no caller can make the host hold more than that.
 */
import { DEFAULT_REMEMBERED_CALL_ID_BYTES } from './call/ids.js';
import { ChurnTable } from './churn-table.js';
import type { CancelOutcome } from './errors.js';

/** What remembering one id costs beyond its characters (a Set entry, roughly). */
const ENTRY_OVERHEAD_BYTES = 64;

export class CallTracker {
  /** Calls in flight, by id (a ChurnTable, not a Map: see churn-table.ts). */
  readonly #inFlight = new ChurnTable<string, { cancel: () => void; principal: string | undefined }>();
  /** Finished ids, for lookups. */
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

  /** Track a call (started by `principal`, when a server authenticated its caller); false when the id is already in flight. */
  begin(callId: string, cancel: () => void, principal?: string): boolean {
    // A finished id may be used again; it stays remembered (the call in flight is found first) and is forgotten in its turn.
    if (this.#inFlight.has(callId)) return false;
    this.#inFlight.set(callId, { cancel, principal });
    return true;
  }

  end(callId: string): void {
    if (!this.#inFlight.delete(callId)) return;
    if (this.#completed.has(callId)) return;
    this.#completed.add(callId);
    this.#order.push(callId);
    this.#bytes += cost(callId);
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
   * Cancel a call in flight. With `principal` (an authenticated caller), a
   * call another principal (or no principal) started answers NOT_FOUND: it
   * is not the caller's to cancel, nor to learn about.
   */
  cancel(callId: string, principal?: string): CancelOutcome {
    const call = this.#inFlight.get(callId);
    if (call) {
      if (principal !== undefined && call.principal !== principal) return 'NOT_FOUND';
      call.cancel();
      return 'CANCELLED';
    }
    return this.#completed.has(callId) ? 'ALREADY_COMPLETED' : 'NOT_FOUND';
  }

  /** Whether a call is in flight, finished recently, or unknown (nothing is cancelled). */
  state(callId: string): 'in_flight' | 'completed' | 'unknown' {
    if (this.#inFlight.has(callId)) return 'in_flight';
    return this.#completed.has(callId) ? 'completed' : 'unknown';
  }

  /** Whether `callId` is in flight, started by someone other than `principal`. */
  heldByOther(callId: string, principal: string): boolean {
    const call = this.#inFlight.get(callId);
    return call !== undefined && call.principal !== principal;
  }

  get size(): number {
    return this.#inFlight.size;
  }

  /** Cancel every call in flight (used when the host closes). */
  cancelAll(): void {
    for (const { cancel } of this.#inFlight.values()) cancel();
  }
}

function cost(callId: string): number {
  return callId.length * 2 + ENTRY_OVERHEAD_BYTES;
}
