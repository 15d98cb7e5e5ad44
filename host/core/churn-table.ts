/**
 * A keyed table for entries that come and go with every call (calls in
 * flight, tasks waiting for their answer): a Map from key to a slot number,
 * and the values in an array of slots.
 *
 * Why not a Map from key to value: a Map that replaces its hash table (it
 * does every few deletions when entries churn) links the old table to the new
 * one, and the old one keeps the entries it held. A scavenge treats everything
 * in the old generation as live, so once one of those tables is there (a
 * major GC moves the young generation there), every later table stays
 * reachable through the links, with the values it held, until the next major
 * GC. Measured on the main thread at 8 calls in flight: every call's object
 * graph was promoted (2.3 KiB a call, scavenges of 5-7 ms, p99 7 ms). Here the
 * Map holds only keys and slot numbers, and a slot is cleared when its entry
 * leaves, so nothing of a finished call stays reachable. (A dictionary-mode
 * object avoids the chain too, but interns every string key it is given: the
 * tracker's call ids cost ~7 µs a call that way.)
 */
export class ChurnTable<K, V> {
  readonly #slotOf = new Map<K, number>();
  readonly #slots: Array<V | undefined> = [];
  readonly #free: number[] = [];

  get size(): number {
    return this.#slotOf.size;
  }

  get(key: K): V | undefined {
    const slot = this.#slotOf.get(key);
    return slot === undefined ? undefined : this.#slots[slot];
  }

  has(key: K): boolean {
    return this.#slotOf.has(key);
  }

  /** Add or replace `key`'s entry. */
  set(key: K, value: V): void {
    let slot = this.#slotOf.get(key);
    if (slot === undefined) {
      slot = this.#free.pop() ?? this.#slots.length;
      this.#slotOf.set(key, slot);
    }
    this.#slots[slot] = value;
  }

  /** Remove `key`'s entry; false when there was none. */
  delete(key: K): boolean {
    const slot = this.#slotOf.get(key);
    if (slot === undefined) return false;
    this.#slotOf.delete(key);
    this.#slots[slot] = undefined;
    this.#free.push(slot);
    return true;
  }

  /** Remove every entry. */
  clear(): void {
    this.#slotOf.clear();
    this.#slots.length = 0;
    this.#free.length = 0;
  }

  /** The keys and values now, in the order they were added (a copy). */
  entries(): Array<[K, V]> {
    const entries: Array<[K, V]> = [];
    for (const [key, slot] of this.#slotOf) entries.push([key, this.#slots[slot]!]);
    return entries;
  }

  /** The entries now, in the order they were added (a copy: the table may change while they are used). */
  values(): V[] {
    const values: V[] = [];
    for (const slot of this.#slotOf.values()) values.push(this.#slots[slot]!);
    return values;
  }
}
