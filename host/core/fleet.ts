/**
 * Calls known beyond this host. The embedded default is none: a call is known
 * only to this host's {@link CallTracker}, and cancel answers from it alone.
 * A fleet implementation (Redis, in `host/fleet/`) registers each call where
 * every host can see it, enforces fleet-wide concurrency caps, and carries a
 * cancel to the host that runs the call.
 */
import type { CancelOutcome } from './errors.js';

/** What the fleet is told about a call that is starting on this host. */
export interface FleetCall {
  callId: string;
  tool: string;
  /** Whom the call counts against for per-tenant caps: the agent's name, else its session. */
  tenant?: string;
}

/** What the fleet needs from the host it runs in. */
export interface FleetHostHooks {
  /**
   * Cancel a call in flight on this host (the local tracker's answer). With a
   * principal, another principal's call is NOT_FOUND, as for a local cancel.
   */
  cancelLocal(callId: string, principal?: string): CancelOutcome;
}

/** Whether the fleet's shared store is reachable (for health and metrics). */
export interface FleetStatus {
  hostId: string;
  /** `up` when the shared store answers; `down` while it is unreachable (the host reconnects by itself). */
  store: 'up' | 'down';
  /** Calls of this host registered fleet-wide. */
  registered: number;
  /** Calls this host ran without registering them (the store was down when they started). */
  unregistered: number;
}

export interface CallDirectory {
  /** Called once by the registry that uses the directory. */
  bind(hooks: FleetHostHooks): void;
  /**
   * Register a call starting on this host, within the fleet's caps. Rejects
   * with a ToolhostError: OVERLOADED (a fleet-wide cap is reached) or
   * INVALID_INPUT (the id runs on another host). When the shared store is
   * unreachable it resolves (logged): the call runs, known to this host only.
   */
  enter(call: FleetCall): Promise<void>;
  /** The call is over on this host (best effort, never throws). */
  leave(callId: string): void;
  /**
   * Cancel a call this host is not running: CANCELLED (its host was told),
   * NOT_FOUND or ALREADY_COMPLETED. Rejects with FLEET_UNAVAILABLE when the
   * shared store or the call's host cannot be reached. The principal (the
   * canceller's, when authenticated) goes with the request: the call's host
   * answers NOT_FOUND for a call another principal started.
   */
  cancel(callId: string, principal?: string): Promise<CancelOutcome>;
  status(): FleetStatus;
}
