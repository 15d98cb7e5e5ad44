/**
 * Fair shares of the in-memory state store between principals (issue 36, M7:
 * one principal's 75 calls wiped every other principal's conversations, the
 * store being one least-recently-used list).
 *
 * Conversations are grouped by their owner, the authenticated principal their
 * key names (`principalOfScope`, core/principal-scope.ts; every caller without
 * a principal is one owner, `(anonymous)`). Each owner holding state has a
 * share of each store-wide limit: `floor(total / owners)` bytes of
 * `state_total_bytes` and `floor(conversations / owners)` of
 * `state_conversations`, where `owners` counts the owners that would hold state
 * after the write (the writer included). Shares bind only when the store is
 * full: below the limits one owner may use all the room there is.
 *
 * When a write would pass a limit, the room is made one conversation at a time:
 * - if the writer is over its share (after the write), its own least recently
 *   used conversation goes (never the one being written);
 * - otherwise the conversation goes from the other owner most over its share,
 *   its least recently used one first; an owner within its share loses nothing
 *   to another's writes;
 * - when neither can give (the writer is over its share and holds nothing but
 *   the conversation being written), the write is refused: nothing is evicted.
 * The plan is made before anything is dropped, so a refused write drops nothing.
 *
 * Guarantees: a principal whose state stays within its share never loses a
 * conversation to another principal's writes (shares only grow as owners leave,
 * and shrink by at most one owner's worth when a new principal writes); within
 * a principal the order is least recently used first.
 * Does not guarantee: anything between callers who share one owner (every
 * unauthenticated caller is `(anonymous)`, and a library without principals is
 * one owner: the old single LRU); nor that a principal keeps state beyond its
 * share once others need the room (the share is `total / owners`, so many
 * principals mean small shares: size `state_total_bytes` for them).
 */
import { principalOfScope } from './principal-scope.js';

/** One owner's conversations, least recently used first, and what they are charged in all. */
export interface ShareOwner<C> {
  readonly conversations: Map<string, C>;
  bytes: number;
}

/** What a write asks of the store. */
export interface ShareWrite {
  /** The owner writing (see {@link ownerOf}). */
  owner: string;
  /** The conversation written: never evicted for its own write. */
  conversationId: string;
  /** Whether the conversation is new (it then counts against the conversation limit). */
  isNew: boolean;
  /** What the write adds to the store's bytes (may be negative). */
  addedBytes: number;
}

/** A conversation to drop, and why (the name of the limit it made room under). */
export interface ShareEviction {
  owner: string;
  conversationId: string;
  limit: 'state_conversations' | 'state_total_bytes';
}

/** The plan: what to drop, or the limit that refuses the write (nothing is to be dropped then). */
export type SharePlan = { evict: ShareEviction[] } | { refuse: 'state_conversations' | 'state_total_bytes'; share: number };

/** Whose share a conversation counts against: its key's principal, `(anonymous)` without one. */
export function ownerOf(conversationId: string): string {
  return principalOfScope(conversationId);
}

interface Simulated {
  bytes: number;
  count: number;
  cursor: Iterator<[string, unknown]> | undefined;
}

/**
 * Which conversations to drop so that `write` fits within `maxTotalBytes` and
 * `maxConversations` (see the header for the rule).
 */
export function planRoom<C>(
  owners: ReadonlyMap<string, ShareOwner<C>>,
  held: { bytes: number; conversations: number },
  limits: { maxTotalBytes: number; maxConversations: number },
  write: ShareWrite,
  chargeOf: (conversation: C) => number,
): SharePlan {
  let total = held.bytes + write.addedBytes;
  let count = held.conversations + (write.isNew ? 1 : 0);
  const evict: ShareEviction[] = [];
  if (total <= limits.maxTotalBytes && count <= limits.maxConversations) return { evict };
  // Each owner as it would be after the evictions planned so far (the maps are not touched until the plan is applied).
  const simulated = new Map<string, Simulated>();
  for (const [name, owner] of owners) simulated.set(name, { bytes: owner.bytes, count: owner.conversations.size, cursor: undefined });
  const writer = simulated.get(write.owner) ?? { bytes: 0, count: 0, cursor: undefined };
  writer.bytes += write.addedBytes;
  if (write.isNew) writer.count += 1;
  simulated.set(write.owner, writer);
  for (;;) {
    const overCount = write.isNew && count > limits.maxConversations;
    const overBytes = total > limits.maxTotalBytes;
    if (!overCount && !overBytes) return { evict };
    const limit = overCount ? 'state_conversations' : 'state_total_bytes';
    let active = 0;
    for (const owner of simulated.values()) if (owner.count > 0) active += 1;
    const share = Math.max(1, Math.floor((overCount ? limits.maxConversations : limits.maxTotalBytes) / active));
    const excess = (owner: Simulated): number => (overCount ? owner.count : owner.bytes) - share;
    let victimOwner: string | undefined;
    if (excess(writer) > 0) {
      victimOwner = write.owner;
    } else {
      let most = 0;
      for (const [name, owner] of simulated) {
        if (name === write.owner || owner.count === 0) continue;
        const over = excess(owner);
        if (over > most) {
          most = over;
          victimOwner = name;
        }
      }
    }
    const victim = victimOwner === undefined ? undefined : nextVictim(owners.get(victimOwner), simulated.get(victimOwner) as Simulated, write.conversationId);
    if (victimOwner === undefined || victim === undefined) return { refuse: limit, share };
    const [conversationId, conversation] = victim as [string, C];
    const charge = chargeOf(conversation);
    const owner = simulated.get(victimOwner) as Simulated;
    owner.bytes -= charge;
    owner.count -= 1;
    total -= charge;
    count -= 1;
    evict.push({ owner: victimOwner, conversationId, limit });
  }
}

/** The owner's next least recently used conversation that is not `keep`, or undefined when it has none left. */
function nextVictim<C>(owner: ShareOwner<C> | undefined, simulated: Simulated, keep: string): [string, C] | undefined {
  if (owner === undefined) return undefined;
  simulated.cursor ??= owner.conversations.entries();
  for (;;) {
    const next = simulated.cursor.next();
    if (next.done === true) return undefined;
    const entry = next.value as [string, C];
    if (entry[0] !== keep) return entry;
  }
}
