/**
 * Memory size classes (issue 36, M8): the memory cap a call runs under is one
 * of a few values, because each distinct cap is a variant of the component's
 * core modules, capped and compiled (~37 MiB for a componentize-js tool) and
 * kept by the workers. Before, every distinct `memory_mb` a caller asked for
 * (up to 4096 of them under a grant without `memory_mb`) compiled a variant of
 * its own; 20 values held +745 MiB.
 *
 * The rule: a cap the host's configuration names is applied exactly (the
 * host's `memory_mb` default and ceiling, the tool's grant `memory_mb` and its
 * default policy's); any other value, which only a caller can choose, is
 * rounded DOWN to a power of two (1, 2, 4 ... 4096 MiB). So a caller gets at
 * most what it asked for (never more: a cap is a promise to the caller too),
 * at least half of it, and never more than the grant or the host's ceiling
 * (rounding happens after the grant's and the ceiling's checks). A component
 * then has at most 13 caller-chosen variants plus the configured ones.
 *
 * Does not guarantee: a guest that fits in what a caller asked for fits in the
 * class below it (a caller asking 100 MiB gets 64 MiB; a caller who needs an
 * exact cap asks for a power of two, or the operator configures it).
 */

/** The largest power of two (MiB) at or below `mb` (at least 1). */
export function powerOfTwoBelow(mb: number): number {
  let power = 1;
  while (power * 2 <= mb) power *= 2;
  return power;
}

/**
 * The cap applied for a cap of `mb` (already within the grant and the host's ceiling): `mb` itself when
 * the configuration names it (`configured`), else the power of two at or below it.
 */
export function memorySizeClass(mb: number, configured: ReadonlyArray<number | undefined>): number {
  if (configured.includes(mb)) return mb;
  return powerOfTwoBelow(mb);
}
