/**
 * Calls known beyond this host. The embedded default is none: a call is known
 * only to this host's {@link CallTracker}, and cancel answers from it alone.
 * A fleet implementation (Redis, in `host/fleet/`) registers each call where
 * every host can see it, enforces fleet-wide concurrency caps, and carries a
 * cancel to the host that runs the call.
 */
import type { CallTracer, TraceSpan } from './tracing.js';
import type { CancelOutcome } from '../base/errors.js';

/** What the fleet is told about a call that is starting on this host. */
export interface FleetCall {
  /** The caller's id; fleet-wide it is the principal's (see principal-scope.ts `callKey`). */
  callId: string;
  /** The caller's principal (a server authenticated it); absent for the library and unauthenticated clients. */
  principal?: string;
  tool: string;
  /** Whom the call counts against for per-tenant caps: its principal (principal-scope.ts `tenantOf`), never a client-chosen name. */
  tenant: string;
  /** The client-chosen agent name (else session), shown within its tenant in the fleet view; it decides no cap. */
  agent?: string;
}

/** What the fleet needs from the host it runs in. */
export interface FleetHostHooks {
  /**
   * Cancel a call in flight on this host (the local tracker's answer). With a
   * principal, another principal's call is NOT_FOUND, as for a local cancel.
   */
  cancelLocal(callId: string, principal?: string): CancelOutcome;
  /** Where the fleet's own spans go (a cancel relayed from another host continues its canceller's trace). */
  tracer?: CallTracer;
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
   * INVALID_INPUT (the same principal's id runs on another host). When the
   * shared store is unreachable it resolves (logged): the call runs, known to
   * this host only. Ids are per principal: another principal's call of the
   * same id neither blocks nor is blocked by this one.
   */
  enter(call: FleetCall): Promise<void>;
  /**
   * `principal`'s call `callId` is over on this host. Resolves once its fleet
   * places are given back (or giving them back failed, logged: they lapse with
   * the lease); never rejects. The call layer awaits it before the terminal
   * goes out, so a caller that has seen its call end finds its places free on
   * every host (a cap of 1 lets the next call in at once).
   */
  leave(callId: string, principal?: string): Promise<void>;
  /**
   * Cancel a call this host is not running: CANCELLED (its host was told),
   * NOT_FOUND or ALREADY_COMPLETED. Rejects with FLEET_UNAVAILABLE when the
   * shared store or the call's host cannot be reached. Only the canceller's
   * own calls are looked up (its principal's; without one, calls started
   * without one), and the principal goes with the request to the call's host:
   * another principal's call of the same id answers NOT_FOUND, in flight or
   * finished. With `span` (a traced cancel), the request carries its trace context to the call's host, whose
   * `fleet.cancel` span continues the same trace.
   */
  cancel(callId: string, principal?: string, span?: TraceSpan): Promise<CancelOutcome>;
  status(): FleetStatus;
}
