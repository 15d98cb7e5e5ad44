/**
 * A tool's MCP annotations as the host lists them: derived from what its grant
 * lets it do, because the sandbox enforces the grant and not the author's words.
 *
 * Guarantees, for a sandboxed tool (the grant is what its calls can get; a call
 * can only narrow it):
 * - `openWorldHint: false` only when the grant's network is DENY_ALL (any other
 *   label can reach something outside the host).
 * - `readOnlyHint: true` and `destructiveHint: false` only when the grant has no
 *   writable worktree (privilege below ELEVATED: MINIMAL has no filesystem,
 *   DEFAULT a read-only one), no network, and no write to conversation state
 *   (`grant.state.access` `read` or `none`; the default, `write`, lets every
 *   call change what later calls in the conversation read: issue 36, M11, a
 *   tool listed read-only rewrote another component's state).
 * - `idempotentHint` is the tool's `idempotent` (which the host also acts on:
 *   only idempotent tools are retried).
 * - Never less cautious than the author: an author's cautious hint
 *   (`readOnlyHint: false`, `destructiveHint: true`, `idempotentHint: false`,
 *   `openWorldHint: true`) is kept even where the grant would allow the safer
 *   one; an author's safe hint is listed only where the grant guarantees it
 *   (a `readOnlyHint: true` on a tool whose grant can write is listed `false`).
 * - Native tools run in-process and are trusted code, so their grant is not a
 *   sandbox: `readOnlyHint: true` only when the tool itself says `readOnly`
 *   (the host's own fact) and then `destructiveHint: false`; `openWorldHint`
 *   from the grant's network (the host's native tools reach the network only
 *   through the call's label and egress checker).
 * - Tools imported from another MCP server keep that server's annotations
 *   (the host cannot see what they do).
 *
 * Does not guarantee: what an embedder's own native tool does beyond what it
 * declares, nor anything about `idempotentHint` beyond the author's word.
 */
import type { ToolGrant } from './grant.js';
import { PRIVILEGE_LABELS, labelRank } from './labels.js';

/** MCP tool annotations (the four hints). */
export interface ToolHints {
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
}

/** What the derivation reads of a tool. */
export interface AnnotatedTool {
  readonly executionMode: 'native' | 'sandboxed';
  readonly idempotent: boolean;
  /** A native tool's own statement that it changes nothing. */
  readonly readOnly?: boolean;
  /** `mcp:SERVER` for a tool imported from another MCP server. */
  readonly source?: string;
  /** The author's hints (an imported tool: its server's). */
  readonly annotations?: ToolHints;
  readonly grant?: ToolGrant;
}

/** The hints the host lists for a tool (see the header for what each one guarantees). */
export function deriveAnnotations(tool: AnnotatedTool): Required<Pick<ToolHints, 'idempotentHint'>> & ToolHints {
  if (isImported(tool)) return { ...tool.annotations, idempotentHint: tool.annotations?.idempotentHint ?? tool.idempotent };
  const author = tool.annotations ?? {};
  const grant = tool.grant ?? {};
  const network = (grant.network ?? 'DENY_ALL') !== 'DENY_ALL';
  const writable = labelRank(PRIVILEGE_LABELS, grant.privilege ?? 'MINIMAL') >= labelRank(PRIVILEGE_LABELS, 'ELEVATED');
  const writesState = (grant.state?.access ?? 'write') === 'write';
  const confined = tool.executionMode === 'sandboxed' ? !writable && !network && !writesState : tool.readOnly === true;
  // An author who says the tool is destructive does not call it read-only either.
  const readOnly = confined && author.readOnlyHint !== false && author.destructiveHint !== true;
  return {
    readOnlyHint: readOnly,
    destructiveHint: !readOnly,
    idempotentHint: tool.idempotent && author.idempotentHint !== false,
    openWorldHint: network || author.openWorldHint === true,
  };
}

function isImported(tool: AnnotatedTool): boolean {
  return tool.executionMode === 'native' && tool.source?.startsWith('mcp:') === true;
}
