/** Which calls are in flight (cancellable) and which finished recently. */
import type { CancelOutcome } from './errors.js';

const RECENTLY_COMPLETED_LIMIT = 10_000;

export class CallTracker {
  readonly #inFlight = new Map<string, () => void>();
  readonly #completed = new Set<string>();

  /** Track a call; false when the id is already in flight. */
  begin(callId: string, cancel: () => void): boolean {
    if (this.#inFlight.has(callId)) return false;
    this.#completed.delete(callId);
    this.#inFlight.set(callId, cancel);
    return true;
  }

  end(callId: string): void {
    if (!this.#inFlight.delete(callId)) return;
    this.#completed.add(callId);
    if (this.#completed.size > RECENTLY_COMPLETED_LIMIT) {
      // Sets iterate in insertion order: drop the oldest.
      const oldest = this.#completed.values().next().value;
      if (oldest !== undefined) this.#completed.delete(oldest);
    }
  }

  cancel(callId: string): CancelOutcome {
    const cancel = this.#inFlight.get(callId);
    if (cancel) {
      cancel();
      return 'CANCELLED';
    }
    return this.#completed.has(callId) ? 'ALREADY_COMPLETED' : 'NOT_FOUND';
  }

  get size(): number {
    return this.#inFlight.size;
  }

  /** Cancel every call in flight (used when the host closes). */
  cancelAll(): void {
    for (const cancel of this.#inFlight.values()) cancel();
  }
}
