/**
 * A tool's grant: the most the host lets it do (from the host's configuration).
 * A call can only narrow it; asking for more is refused.
 */
import type { ExecutionPolicyInput } from './execution-policy.js';
import type { NetworkLabel, PrivilegeLabel } from './labels.js';

export interface ToolGrant {
  /** The most permissive network label calls may ask for (default DENY_ALL). */
  network?: NetworkLabel;
  /**
   * Destinations EGRESS_RESTRICTED allows, and exceptions EGRESS_UNRESTRICTED
   * makes for non-public addresses: `host`, `*.domain`, `host:port`, an IP or a CIDR.
   */
  egressAllow?: string[];
  /** Whether the guest's own outgoing HTTP carries the call's trace context (default false: its destinations are third parties). */
  propagateTrace?: boolean;
  /** The highest privilege level calls may ask for (default MINIMAL). */
  privilege?: PrivilegeLabel;
  /** Environment keys an ELEVATED (or higher) call may see. */
  envAllow?: string[];
  /** Configured values for allowlisted keys (otherwise the call's env, then the host's). */
  env?: Record<string, string>;
  /** Cap on the guest's linear memory (MiB); a call's `memory_mb` above it is lowered to it. */
  memoryMb?: number;
  /** A worktree bound to every call of the tool that does not bring its own. */
  worktree?: string;
  /**
   * Whether the tool may ask the calling client's model for completions (MCP sampling), and how much:
   * requests per call (default 5) and `maxTokens` per request (default 4096). Absent: denied.
   */
  sampling?: { maxRequests?: number; maxTokens?: number };
  /** Whether the tool may ask the calling client's user (MCP elicitation): requests per call (default 3). Absent: denied. */
  elicitation?: { maxRequests?: number };
  /** Whether the tool may ask which filesystem roots the calling client exposes (MCP roots/list): requests per call (default 3). Absent: denied. */
  roots?: { maxRequests?: number };
  /**
   * Conversation state (`get-state`/`set-state`, `ctx.state`): `access` is what the tool may do with it
   * (`write`, the default: read and write; `read`: writes refused; `none`: reads find nothing, writes
   * refused); `share` names a group whose members read and write one namespace of each conversation's
   * state. Without `share` a component's tools have a namespace of their own (the component's name), and
   * native tools share the conversation's host namespace (see core/state.ts `stateNamespace`).
   */
  state?: ToolStateGrant;
}

/** What a tool may do with conversation state, and with whom it shares it. */
export interface ToolStateGrant {
  access?: StateAccess;
  /** A group name (`[A-Za-z0-9._-]`, at most 64 characters): every tool granted it shares one namespace. */
  share?: string;
}

export type StateAccess = 'none' | 'read' | 'write';

/** What a tool's calls get when they do not say (within the grant). */
export type ToolDefaultPolicy = ExecutionPolicyInput;
