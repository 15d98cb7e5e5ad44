/**
 * An incremental parser for newline-delimited JSON (`application/x-ndjson`,
 * `application/jsonl`): one value per line.
 *
 * Decisions:
 * - Lines end at `\n`; a `\r` before it is removed (`\r\n` works). Lines that
 *   are empty or only whitespace are skipped.
 * - A line is parsed as JSON; a complete line that does not parse is delivered
 *   as its text (`json: false`), not treated as a failure: servers labelled
 *   NDJSON do interleave plain text lines, and the caller sees exactly what
 *   was sent.
 * - At the end of the stream, a last line without its `\n` is delivered when
 *   it parses as JSON (many servers omit the final newline). When it does not
 *   parse, the stream was most likely cut in the middle of a value: {@link
 *   NdjsonParser.end} reports it as `truncated` instead of passing off a
 *   fragment as a line.
 */
import { LineSplitter } from './line-splitter.js';

/** One line. */
export interface NdjsonLine {
  /** The parsed value, or the line's text when it is not JSON. */
  value: unknown;
  /** Whether the line parsed as JSON. */
  json: boolean;
}

export type NdjsonEnd = { truncated: false } | { truncated: true; partial: string };

export class NdjsonParser {
  readonly #lines = new LineSplitter({ cr: false });

  /** Feed a chunk; returns the non-empty lines it completed, in order. */
  push(chunk: Uint8Array | string): NdjsonLine[] {
    return this.#parse(this.#lines.push(chunk));
  }

  /** The stream ended: the lines the end completed, and whether the last line was cut off. */
  end(): { lines: NdjsonLine[]; end: NdjsonEnd } {
    const { lines, rest } = this.#lines.end();
    const parsed = this.#parse(lines);
    const last = rest === undefined ? '' : rest.endsWith('\r') ? rest.slice(0, -1) : rest;
    if (last.trim() === '') return { lines: parsed, end: { truncated: false } };
    const value = parseJson(last);
    if (value === undefined) return { lines: parsed, end: { truncated: true, partial: last } };
    parsed.push({ value: value.value, json: true });
    return { lines: parsed, end: { truncated: false } };
  }

  #parse(lines: string[]): NdjsonLine[] {
    const out: NdjsonLine[] = [];
    for (const line of lines) {
      if (line.trim() === '') continue;
      const value = parseJson(line);
      out.push(value === undefined ? { value: line, json: false } : { value: value.value, json: true });
    }
    return out;
  }
}

/** `{ value }` when `text` is JSON, `undefined` otherwise. */
export function parseJson(text: string): { value: unknown } | undefined {
  try {
    return { value: JSON.parse(text) as unknown };
  } catch {
    return undefined;
  }
}
