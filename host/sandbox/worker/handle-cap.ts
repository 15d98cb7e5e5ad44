/**
 * The worker's side of the cap on resource handles a guest holds: the glue
 * (patched, see glue-patch.ts `capOwnHandles`) counts the handles each
 * instance holds and reads the cap, and what to do past it, from one worker
 * global. The instance serving a call names that call's bridge here while it
 * runs; between calls (a spare's initialization) the default cap applies and
 * going past it traps.
 */
import { DEFAULT_GUEST_OUTPUT_LIMITS } from '../protocol.js';
import type { HostBridge } from './host-bridge.js';

/** The worker global the patched glue reads (keep in step with glue-patch.ts). */
export const HANDLE_HOOKS = Symbol.for('toolhost.handles');

let serving: HostBridge | undefined;

/** Name the call whose limits apply (undefined: none, between calls). */
export function handlesServe(bridge: HostBridge | undefined): void {
  serving = bridge;
}

(globalThis as Record<symbol, unknown>)[HANDLE_HOOKS] = {
  get max(): number {
    return serving?.maxHandles ?? DEFAULT_GUEST_OUTPUT_LIMITS.maxHandles;
  },
  /** Past the cap: a call ends with OUTPUT_LIMIT_EXCEEDED (this throws); outside a call the glue traps. */
  refused(): void {
    serving?.handlesExceeded();
  },
};
