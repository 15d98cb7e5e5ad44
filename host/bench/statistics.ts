/**
 * Latency statistics: nearest-rank percentiles over sorted samples, and the
 * compact shape a row keeps of its distribution (101 quantiles, enough to
 * draw it and small enough to print as JSON).
 */

/** Nearest-rank percentile (`p` in 0..1) of ascending values; NaN when there are none. */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil(p * sorted.length)));
  return sorted[rank - 1]!;
}

export function mean(values: ArrayLike<number>): number {
  if (values.length === 0) return Number.NaN;
  let sum = 0;
  for (let i = 0; i < values.length; i += 1) sum += values[i]!;
  return sum / values.length;
}

/** The median of unsorted values (NaN when there are none). */
export function median(values: readonly number[]): number {
  return percentile([...values].sort((a, b) => a - b), 0.5);
}

export interface LatencySummary {
  p50Ms: number;
  p99Ms: number;
  meanMs: number;
  minMs: number;
  maxMs: number;
  /** quantiles[i] is the i-th percentile (0 = min, 100 = max): the distribution, for charts. */
  quantiles: number[];
}

/** Summarise latencies (sorted in place). */
export function summarize(latencies: Float64Array): LatencySummary {
  latencies.sort();
  const quantiles = Array.from({ length: 101 }, (_, i) => (i === 0 ? (latencies[0] ?? Number.NaN) : percentile(latencies, i / 100)));
  return {
    p50Ms: percentile(latencies, 0.5),
    p99Ms: percentile(latencies, 0.99),
    meanMs: mean(latencies),
    minMs: latencies[0] ?? Number.NaN,
    maxMs: latencies[latencies.length - 1] ?? Number.NaN,
    quantiles: quantiles.map(round3),
  };
}

/** Microsecond precision is all a millisecond figure needs (keeps the JSON short). */
export function round3(value: number): number {
  return Math.round(value * 1000) / 1000;
}

/** Smallest, median and largest of a handful of ratios (the median of an even count is the mean of the middle two). */
export interface RatioSpread {
  min: number;
  median: number;
  max: number;
}

/** min, median (mean of the middle two for an even count) and max. */
export function spread(values: readonly number[]): RatioSpread {
  const sorted = [...values].sort((a, b) => a - b);
  const n = sorted.length;
  if (n === 0) return { min: Number.NaN, median: Number.NaN, max: Number.NaN };
  const median = n % 2 === 1 ? sorted[(n - 1) / 2]! : (sorted[n / 2 - 1]! + sorted[n / 2]!) / 2;
  return { min: round3(sorted[0]!), median: round3(median), max: round3(sorted[n - 1]!) };
}
