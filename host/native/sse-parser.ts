/**
 * An incremental parser for `text/event-stream` (Server-Sent Events), following
 * the WHATWG HTML "event stream interpretation" rules:
 *
 * - UTF-8, a leading byte order mark dropped; lines end at `\r\n`, `\n` or `\r`,
 *   wherever the chunks happen to split them.
 * - A blank line dispatches the event being built. A line starting with `:` is
 *   a comment. `field:value` sets a field, with one space after the colon
 *   removed; a line without a colon is a field with an empty value.
 * - `data` appends its value and a `\n` to the data buffer (so multi-line data
 *   is joined with `\n`; the last `\n` is removed at dispatch). `event` sets
 *   the type, `id` the last event id (ignored when it contains U+0000),
 *   `retry` the reconnection time (only all-digit values). Other fields are
 *   ignored.
 * - An event whose data buffer is empty (no `data` line at all) is not
 *   dispatched; a lone `data` line with an empty value dispatches an event
 *   whose data is the empty string.
 *
 * One departure, deliberate: the specification silently discards an event
 * that the end of the stream cuts off before its blank line. Here {@link
 * SseParser.end} reports it (`truncated`), so a caller can refuse to pass off
 * a cut stream as a complete one.
 */
import { LineSplitter } from './line-splitter.js';

/** One dispatched event. */
export interface SseEvent {
  /** The data lines joined with `\n`. */
  data: string;
  /** The `event` field, `message` when the event had none. */
  type: string;
  /** The last event id seen so far (ids persist across events, as in the specification). */
  lastEventId: string;
}

/** How the stream ended. */
export type SseEnd =
  | { truncated: false }
  /** The stream ended inside an event: `partial` is what had been received of it (data lines, or the cut line). */
  | { truncated: true; partial: string };

export class SseParser {
  readonly #lines = new LineSplitter({ cr: true });
  /** The data buffer: each `data` line's value and a `\n` (so non-empty once a `data` line was seen). */
  #data = '';
  #type = '';
  #lastEventId = '';
  #retry: number | undefined;

  /** The last event id seen (persists across events). */
  get lastEventId(): string {
    return this.#lastEventId;
  }

  /** The reconnection time the stream asked for with `retry`, in ms. */
  get retry(): number | undefined {
    return this.#retry;
  }

  /** Feed a chunk; returns the events it completed, in order. */
  push(chunk: Uint8Array | string): SseEvent[] {
    const events: SseEvent[] = [];
    for (const line of this.#lines.push(chunk)) this.#line(line, events);
    return events;
  }

  /**
   * The stream ended. Returns the events the end completed (only lines that
   * were still being decoded) and whether an event was cut off: data lines
   * received without the blank line that dispatches them, or an unterminated
   * line that is not a comment.
   */
  end(): { events: SseEvent[]; end: SseEnd } {
    const { lines, rest } = this.#lines.end();
    const events: SseEvent[] = [];
    for (const line of lines) this.#line(line, events);
    let end: SseEnd = { truncated: false };
    if (rest !== undefined && !rest.startsWith(':')) {
      end = { truncated: true, partial: `${this.#data}${rest}` };
    } else if (this.#data !== '') {
      end = { truncated: true, partial: this.#data.endsWith('\n') ? this.#data.slice(0, -1) : this.#data };
    }
    this.#data = '';
    this.#type = '';
    return { events, end };
  }

  #line(line: string, events: SseEvent[]): void {
    if (line === '') {
      this.#dispatch(events);
      return;
    }
    if (line.charCodeAt(0) === 0x3a) return; // ':' a comment
    const colon = line.indexOf(':');
    let field: string;
    let value: string;
    if (colon < 0) {
      field = line;
      value = '';
    } else {
      field = line.slice(0, colon);
      value = line.charCodeAt(colon + 1) === 0x20 ? line.slice(colon + 2) : line.slice(colon + 1);
    }
    switch (field) {
      case 'data':
        this.#data += `${value}\n`;
        break;
      case 'event':
        this.#type = value;
        break;
      case 'id':
        if (!value.includes('\u0000')) this.#lastEventId = value;
        break;
      case 'retry':
        if (/^[0-9]+$/.test(value)) this.#retry = Number(value);
        break;
      default:
        break;
    }
  }

  #dispatch(events: SseEvent[]): void {
    const type = this.#type;
    this.#type = '';
    if (this.#data === '') return;
    const data = this.#data.slice(0, -1); // the buffer always ends with the `\n` of its last line
    this.#data = '';
    events.push({ data, type: type === '' ? 'message' : type, lastEventId: this.#lastEventId });
  }
}
