/**
 * Bounds on Prometheus label values, so that no client grows `/metrics` (or
 * the heap behind it) by the names it sends.
 *
 * Guarantees: a value passed through a {@link LabelValues} is at most
 * {@link MAX_LABEL_CHARS} characters (longer ones are cut, never split inside
 * a UTF-16 surrogate pair), and one {@link LabelValues} hands out at most
 * `maxValues` distinct values: once full, a value it has not seen is counted
 * under {@link OTHER_LABEL} (and reported to `onFolded`, which
 * metrics.ts counts as `toolhost_metric_label_values_folded_total{label}`).
 * Values seen first keep their own series for the life of the process.
 *
 * It does not decide which values are the client's: metrics.ts maps a tool
 * name that is not registered to {@link UNKNOWN_TOOL} before it gets here.
 */

/** The longest label value kept (longer ones are cut). */
export const MAX_LABEL_CHARS = 128;

/** Distinct values of one bounded label, by default (`servers.metrics.max_label_values`, `createMetrics(registry, { maxLabelValues })`). */
export const DEFAULT_MAX_LABEL_VALUES = 1000;

/** The `tool` label of a call whose name is no registered tool's (TOOL_NOT_FOUND): one series for all of them. */
export const UNKNOWN_TOOL = '(unknown)';

/** A value past a label's cap. */
export const OTHER_LABEL = '(other)';

export class LabelValues {
  readonly #max: number;
  readonly #onFolded: () => void;
  readonly #seen = new Set<string>();

  constructor(maxValues: number, onFolded: () => void = () => {}) {
    if (!Number.isInteger(maxValues) || maxValues < 1) throw new TypeError('maxLabelValues must be a positive integer');
    this.#max = maxValues;
    this.#onFolded = onFolded;
  }

  /** Distinct values handed out so far (the fixed ones not counted). */
  get size(): number {
    return this.#seen.size;
  }

  /** The value to use for `value`: itself (cut to length), or {@link OTHER_LABEL} once the cap is reached. */
  of(value: string): string {
    const cut = truncateLabel(value);
    if (this.#seen.has(cut)) return cut;
    if (cut === OTHER_LABEL || cut === UNKNOWN_TOOL) return cut;
    if (this.#seen.size >= this.#max) {
      this.#onFolded();
      return OTHER_LABEL;
    }
    this.#seen.add(cut);
    return cut;
  }
}

/** `value` cut to {@link MAX_LABEL_CHARS}, without leaving half a surrogate pair at the end. */
export function truncateLabel(value: string): string {
  if (value.length <= MAX_LABEL_CHARS) return value;
  let cut = value.slice(0, MAX_LABEL_CHARS);
  const last = cut.charCodeAt(cut.length - 1);
  if (last >= 0xd800 && last <= 0xdbff) cut = cut.slice(0, -1);
  return cut;
}
