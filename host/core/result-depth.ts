/**
 * How deep a result may nest. Everything downstream of a call (JSON text for
 * the caller, MCP's schema checks, gRPC frames) walks a result recursively, so
 * a tool that returns a value nested thousands of levels deep (or a native
 * tool returning a cycle) would overflow the host's stack there. The call
 * path checks the depth once, iteratively, before anything else touches it.
 */

/** Levels of arrays and objects a result may have (a scalar is depth 0). */
export const DEFAULT_MAX_RESULT_DEPTH = 256;

/** Whether `value` nests deeper than `limit` levels (a cycle always does). Iterative: never overflows itself. */
export function nestsDeeperThan(value: unknown, limit: number): boolean {
  const pending: Array<[unknown, number]> = [[value, 0]];
  while (pending.length > 0) {
    const [current, depth] = pending.pop()!;
    if (typeof current !== 'object' || current === null) continue;
    if (depth + 1 > limit) return true;
    const children = Array.isArray(current) ? current : Object.values(current as Record<string, unknown>);
    for (const child of children) if (typeof child === 'object' && child !== null) pending.push([child, depth + 1]);
  }
  return false;
}
