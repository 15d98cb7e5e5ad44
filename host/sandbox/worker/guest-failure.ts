/** How a guest call's failure becomes error data (and whether its instance may serve again). */
import type { ToolErrorData } from '../../base/errors.js';
import { OutputLimitExceeded } from './host-bridge.js';

/** Why a guest call failed, and whether its instance is now unusable. */
export interface GuestFailure {
  error: ToolErrorData;
  poisoned: boolean;
}

/**
 * Turn what a guest call threw into error data. `memory` tells whether the
 * instance ended at its memory cap: a guest whose `memory.grow` was refused
 * either traps (its allocator gives up) or fails in its own way, and either
 * way the cap is the cause.
 */
export function classifyGuestFailure(error: unknown, memory?: { bytes: number; capBytes: number }): GuestFailure {
  if (error instanceof OutputLimitExceeded) {
    return { error: { code: 'OUTPUT_LIMIT_EXCEEDED', message: `${error.message}; the call was ended`, details: { reason: 'events' } }, poisoned: true };
  }
  const atCap = memory !== undefined && memory.bytes + Math.max(2 * 1024 * 1024, memory.capBytes / 16) > memory.capBytes;
  const memoryFailure = (cause: string): GuestFailure => ({
    error: {
      code: 'MEMORY_LIMIT_EXCEEDED',
      message: `the guest reached its memory cap of ${Math.round(memory!.capBytes / 1048576)} MiB (${cause})`,
      details: { capBytes: memory!.capBytes, peakBytes: memory!.bytes },
    },
    poisoned: true,
  });
  if (typeof error === 'object' && error !== null && !(error instanceof Error)) {
    const payload = error as { code?: unknown; message?: unknown; details?: unknown };
    if (typeof payload.code === 'string' && typeof payload.message === 'string') {
      if (atCap) return memoryFailure(`it then failed with its own error ${payload.code}: ${payload.message}`);
      const details: Record<string, unknown> = { code: payload.code };
      if (typeof payload.details === 'string') details.details = parseMaybeJson(payload.details);
      return { error: { code: 'TOOL_ERROR', message: payload.message, details }, poisoned: false };
    }
  }
  const exit = error as { exitError?: unknown; code?: unknown };
  if (typeof error === 'object' && error !== null && exit.exitError === true) {
    // wasi:cli/exit carries only ok or err: the shim reports them as status 0 or 1.
    const status = exit.code === 0 ? 'success' : 'failure';
    return { error: { code: 'TOOL_CRASHED', message: `the guest called exit with a ${status} status; the call ended without a result`, details: { reason: 'exit', status } }, poisoned: true };
  }
  if (atCap) return memoryFailure(`it then failed: ${(error as Error)?.message ?? String(error)}`);
  if (error instanceof RangeError && /call stack/i.test((error as Error).message)) {
    return { error: { code: 'TOOL_CRASHED', message: 'the guest overflowed its stack', details: { reason: 'stack-overflow' } }, poisoned: true };
  }
  if (error instanceof WebAssembly.RuntimeError) {
    return { error: { code: 'TOOL_CRASHED', message: `the guest trapped: ${error.message}`, details: { reason: 'trap' } }, poisoned: true };
  }
  const message = error instanceof Error ? error.message : String(error);
  return { error: { code: 'TOOL_CRASHED', message: `the guest failed: ${message}`, details: { reason: 'host-error' } }, poisoned: true };
}

function parseMaybeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}


/**
 * A guest's own error (TOOL_ERROR) counts against the result limit like a
 * result: its message and details are guest input that crosses to the main
 * thread. Over `maxBytes`, the call ends OUTPUT_LIMIT_EXCEEDED instead, quoting
 * the guest's code and at most 64 characters of its message.
 */
export function capToolError(failure: GuestFailure, maxBytes: number): GuestFailure {
  const { error } = failure;
  if (error.code !== 'TOOL_ERROR') return failure;
  // Lengths first (a UTF-16 unit is at least one byte); the details were parsed in this worker, so they serialize here.
  let bytes = error.message.length;
  if (bytes <= maxBytes) {
    let details: string;
    try {
      details = JSON.stringify(error.details) ?? '';
    } catch {
      // Nested past the stack: no client could take it either.
      details = ' '.repeat(maxBytes + 1);
    }
    bytes = Buffer.byteLength(error.message) + Buffer.byteLength(details);
  }
  if (bytes <= maxBytes) return failure;
  const code = (error.details as { code?: unknown } | undefined)?.code;
  const guestCode = typeof code === 'string' ? code.slice(0, 64) : 'TOOL_ERROR';
  const head = error.message.length > 64 ? `${error.message.slice(0, 64)}…` : error.message;
  return {
    error: { code: 'OUTPUT_LIMIT_EXCEEDED', message: `the tool's error (${guestCode}: ${JSON.stringify(head)}) is ${bytes} bytes or more, over the result limit of ${maxBytes}`, details: { reason: 'result', bytes, limit: maxBytes } },
    poisoned: failure.poisoned,
  };
}
