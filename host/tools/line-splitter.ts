/**
 * Incremental UTF-8 decoding and line splitting, shared by the SSE and NDJSON
 * parsers. Bytes arrive in arbitrary pieces (a multi-byte character, or a
 * `\r\n` pair, may be split across two chunks); lines come out whole.
 *
 * - Decoding is UTF-8 with replacement characters for invalid sequences (what
 *   the SSE specification asks for); a leading byte order mark is dropped.
 * - With `cr: true` (SSE) a line ends at `\r\n`, `\n` or a lone `\r`. A `\r` at
 *   the end of a chunk ends the line at once; a `\n` starting the next chunk is
 *   then recognised as the second half of the pair and skipped.
 * - With `cr: false` (NDJSON) a line ends at `\n` only, and one `\r` before it
 *   is removed (so `\r\n` works too).
 */
export interface LineSplitterOptions {
  /** Whether a lone `\r` ends a line (SSE). */
  cr: boolean;
}

export class LineSplitter {
  readonly #cr: boolean;
  readonly #decoder = new TextDecoder('utf-8', { fatal: false, ignoreBOM: false });
  /** The text of the current, unterminated line. */
  #pending = '';
  /** The previous chunk ended with `\r` (cr mode): skip a `\n` that starts the next one. */
  #skipLf = false;
  #ended = false;

  constructor(options: LineSplitterOptions) {
    this.#cr = options.cr;
  }

  /** Feed bytes (or already decoded text); returns the lines they completed, without their terminators. */
  push(chunk: Uint8Array | string): string[] {
    if (this.#ended) throw new Error('the line splitter has ended');
    const text = typeof chunk === 'string' ? chunk : this.#decoder.decode(chunk, { stream: true });
    return this.#split(text);
  }

  /**
   * End of input: flush the decoder (an incomplete character becomes U+FFFD)
   * and return the lines that completed plus what is left of an unterminated
   * last line (`undefined` when the input ended with a line terminator).
   */
  end(): { lines: string[]; rest: string | undefined } {
    if (this.#ended) return { lines: [], rest: undefined };
    this.#ended = true;
    const lines = this.#split(this.#decoder.decode());
    const rest = this.#pending === '' ? undefined : this.#pending;
    this.#pending = '';
    return { lines, rest };
  }

  #split(text: string): string[] {
    const lines: string[] = [];
    let start = 0;
    if (this.#skipLf && text.length > 0) {
      if (text.charCodeAt(0) === 0x0a) start = 1;
      this.#skipLf = false;
    }
    for (let i = start; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c === 0x0a) {
        let line = this.#pending + text.slice(start, i);
        if (!this.#cr && line.endsWith('\r')) line = line.slice(0, -1);
        lines.push(line);
        this.#pending = '';
        start = i + 1;
      } else if (c === 0x0d && this.#cr) {
        lines.push(this.#pending + text.slice(start, i));
        this.#pending = '';
        if (i + 1 < text.length) {
          if (text.charCodeAt(i + 1) === 0x0a) i += 1;
        } else {
          this.#skipLf = true;
        }
        start = i + 1;
      }
    }
    if (start < text.length) this.#pending += text.slice(start);
    return lines;
  }
}
