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
}

/** What a tool's calls get when they do not say (within the grant). */
export type ToolDefaultPolicy = ExecutionPolicyInput;
