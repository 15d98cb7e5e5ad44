import type { ToolGrant } from '../policy/grant.js';

/**
 * The namespace of a conversation's state a tool reads and writes (issue 36,
 * M11: one namespace per conversation let a tool listed read-only rewrite
 * another component's state):
 * - a tool granted `state.share`: `share:<group>`, one namespace for every tool
 *   granted that group (the explicit way for components to share state);
 * - a sandboxed tool: `component:<name>`, its component's own, by the
 *   component's registered name (the file name without `.wasm`, or the name the
 *   embedder gave its bytes), not its content id, so a new version of the same
 *   component keeps reading its state; a component's tools and its prompts and
 *   resources (`surface:COMPONENT`) share it;
 * - a native tool: none (the conversation's host namespace, shared by the
 *   embedder's native tools: trusted code, as before).
 * Guarantees: a component's tools never read or write another component's
 * state unless both are granted the same `share` group (the grant comes from
 * the host's config, never from the component). Does not guarantee: anything
 * between two components loaded under one name (two files of the same name in
 * different directories share a namespace: the host's configuration chose
 * both), nor between native tools.
 */
export function stateNamespace(tool: { readonly executionMode: 'native' | 'sandboxed'; readonly name: string; readonly source?: string; readonly grant?: ToolGrant }): string | undefined {
  const share = tool.grant?.state?.share;
  if (share !== undefined) return `share:${share}`;
  return tool.executionMode === 'sandboxed' ? `component:${tool.source ?? tool.name}` : undefined;
}
