/**
 * Where a caller's names live: every id a client chooses (a call id, a
 * conversation id) and every count kept against a client (the fleet's tenant
 * caps) is scoped by the caller's principal, the name a server authenticated
 * (see servers/principals.ts). Two principals naming the same id name two
 * different things, on one host and across a fleet alike.
 *
 * Guarantees:
 * - a call's key is its id without a principal, else `<principal> <id>`: a
 *   call id is visible ASCII without spaces (call/ids.ts, checked at
 *   admission for every entry point), so an unauthenticated caller's key has
 *   no space, a principal's has one, and the last space splits it back: no
 *   caller can name another's key;
 * - a conversation's key is its id without a principal, else
 *   `\0principal:<principal>\0<id>`: admission refuses a conversation id
 *   that holds U+0000, so an unauthenticated caller's key never starts with
 *   it and can never equal a principal's;
 * - the tenant a call counts against is its principal, or
 *   {@link ANONYMOUS_TENANT} (a name no principal can have) for every caller
 *   without one: a client-chosen name (agent, session) never picks the tenant.
 *
 * It does not authenticate anyone: a library caller passes what principal it
 * likes (the library is trusted); servers pass the token's.
 */

/**
 * The tenant of every call without a principal (the library's, and an
 * unauthenticated server's clients): parentheses are not in a principal's
 * alphabet (`[A-Za-z0-9._@:-]`), so no token can name it.
 */
export const ANONYMOUS_TENANT = '(anonymous)';

/** The character a conversation id may not hold: it delimits a principal's conversation keys. */
export const CONVERSATION_SCOPE_MARK = '\u0000';

/** What a call id is made of (call/ids.ts): visible ASCII, so never a space. */
const CALL_ID = /^[\x21-\x7e]+$/;

/** The key a call is tracked under (in flight, finished, and fleet-wide): see the header. */
export function callKey(principal: string | undefined, callId: string): string {
  return principal === undefined ? callId : `${principal} ${callId}`;
}

/**
 * The key a lookup (cancel, state) names, or undefined when `callId` is no
 * call id at all: such an id names no call (NOT_FOUND). Without this, an
 * unauthenticated caller naming `alice x` would name Alice's key; the paths
 * that start calls check the id at admission, the paths that look them up
 * (a cancel from a server, a tool or another host) go through here.
 */
export function lookupKey(principal: string | undefined, callId: string): string | undefined {
  return typeof callId === 'string' && CALL_ID.test(callId) ? callKey(principal, callId) : undefined;
}

/**
 * The key a conversation's state (and its instances, in `conversation`
 * isolation) lives under: the id itself without a principal, so a library's
 * and an unauthenticated server's callers share one space; else the principal
 * and the id, so two principals naming the same conversation never meet, and
 * (ids holding U+0000 being refused) an unauthenticated caller never reaches a
 * principal's.
 */
export function conversationScope(principal: string | undefined, conversationId: string): string {
  return principal === undefined ? conversationId : `${CONVERSATION_SCOPE_MARK}principal:${principal}${CONVERSATION_SCOPE_MARK}${conversationId}`;
}

/** The principal a conversation key (from {@link conversationScope}, maybe namespaced by {@link stateScope}) names, or {@link ANONYMOUS_TENANT}. */
export function principalOfScope(key: string): string {
  const head = `${CONVERSATION_SCOPE_MARK}principal:`;
  if (!key.startsWith(head)) return ANONYMOUS_TENANT;
  const end = key.indexOf(CONVERSATION_SCOPE_MARK, head.length);
  return end < 0 ? ANONYMOUS_TENANT : key.slice(head.length, end);
}

/**
 * The key one namespace of a conversation's state lives under: the
 * conversation's key, U+0000, and the namespace (`component:<name>` for a
 * component's own state, `share:<group>` for a group granted `state.share`).
 * A conversation id holds no U+0000 (refused at admission), so no caller can
 * name another namespace's key; the principal stays first, so
 * {@link principalOfScope} reads it back. Without a namespace (native tools)
 * the conversation's key itself.
 */
export function stateScope(conversationKey: string, namespace: string | undefined): string {
  return namespace === undefined ? conversationKey : `${conversationKey}${CONVERSATION_SCOPE_MARK}${namespace}`;
}

/**
 * Whom a call counts against for the fleet's per-tenant caps: the tenant a server authenticated (an
 * OAuth token's tenant claim), else its principal; never a name the client chose.
 */
export function tenantOf(principal: string | undefined, tenant?: string): string {
  return tenant ?? principal ?? ANONYMOUS_TENANT;
}
