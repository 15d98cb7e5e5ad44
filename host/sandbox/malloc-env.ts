/**
 * The environment of a process that runs guests, and the one allocator
 * setting it adds. glibc's malloc serves a large block with mmap only until
 * the first such block is freed; it then raises its threshold to that size
 * (up to 32 MiB), so later blocks of a component's size (its ~12 MB core
 * module read, capped and compiled; snapshots of a few MB) come from the heap
 * and stay in the process's RSS after they are freed. With 10 componentize-js
 * components called once each, RSS after their instances were released was
 * 357 MiB with the dynamic threshold and 238 MiB with a fixed one; an idle
 * component 22.7 MiB against 1.5 MiB (issue 28, `toolhost bench --scale 20`).
 * A fixed threshold (`MALLOC_MMAP_THRESHOLD_`) gives such blocks back to the
 * system when freed. A value the operator set is kept.
 *
 * What it does not do: change a process already running (the setting is read
 * at its start: the host process gets it only from whoever starts it; see
 * docs/sizing.md), or anything on a libc other than glibc (the variable is
 * then ignored).
 */

/** Blocks from this size up are mapped and unmapped on their own (bytes): glibc's default before it adapts. */
export const MMAP_THRESHOLD_BYTES = 128 * 1024;

/** `env` with the allocator setting added (unless set there already). */
export function guestProcessEnv(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  if (env.MALLOC_MMAP_THRESHOLD_ !== undefined) return env;
  return { ...env, MALLOC_MMAP_THRESHOLD_: String(MMAP_THRESHOLD_BYTES) };
}
