/**
 * An incremental parser for `text/event-stream` (Server-Sent Events). The
 * field rules (`data`, `event`, `id`, `retry`, comments, dispatch on a blank
 * line) are eventsource-parser's; this class adds what it does not do:
 *
 * - Bytes: UTF-8 decoding and line splitting happen in {@link LineSplitter}
 *   (a leading byte order mark dropped; lines end at `\r\n`, `\n` or `\r`,
 *   wherever the chunks split them), and the library is fed whole lines. It
 *   gets no bytes of a line before the line is complete, which is what lets
 *   {@link SseParser.end} tell a cut line from buffered data.
 * - The end of the stream: the specification (and the library) silently
 *   discard an event that the end cuts off before its blank line. Here
 *   {@link SseParser.end} reports it (`truncated`), so a caller can refuse to
 *   pass off a cut stream as a complete one.
 *
 * What follows from the library, and differs from the WHATWG rules: the last
 * event id is taken from dispatched events only, so an `id` sent in an event
 * without data is not remembered (the HTTP tool uses only `data`).
 */
import { createParser, type EventSourceMessage, type EventSourceParser } from 'eventsource-parser';
import { LineSplitter } from './line-splitter.js';

/** One dispatched event. */
export interface SseEvent {
  /** The data lines joined with `\n`. */
  data: string;
  /** The `event` field, `message` when the event had none. */
  type: string;
  /** The id of the latest dispatched event that had one (persists across events; see the module doc). */
  lastEventId: string;
}

/** How the stream ended. */
export type SseEnd =
  | { truncated: false }
  /** The stream ended inside an event: `partial` is what had been received of it (data lines, or the cut line). */
  | { truncated: true; partial: string };

export class SseParser {
  readonly #lines = new LineSplitter({ cr: true });
  readonly #fields: EventSourceParser;
  /** Where the library's events go: the events of the current push, or the end's probe. */
  #sink: EventSourceMessage[] = [];
  #lastEventId = '';
  #retry: number | undefined;

  constructor() {
    this.#fields = createParser({
      onEvent: (event) => this.#sink.push(event),
      onRetry: (ms) => {
        this.#retry = ms;
      },
    });
  }

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
    return this.#feed(this.#lines.push(chunk));
  }

  /**
   * The stream ended. Returns the events the end completed (only lines that
   * were still being decoded) and whether an event was cut off: data lines
   * received without the blank line that dispatches them, or an unterminated
   * line that is not a comment.
   */
  end(): { events: SseEvent[]; end: SseEnd } {
    const { lines, rest } = this.#lines.end();
    const events = this.#feed(lines);
    // A blank line now dispatches whatever data the library still buffers: that event was cut off.
    const probe: EventSourceMessage[] = [];
    this.#sink = probe;
    this.#fields.feed('\n');
    this.#fields.reset();
    const buffered = probe[0];
    let end: SseEnd = { truncated: false };
    if (rest !== undefined && !rest.startsWith(':')) {
      end = { truncated: true, partial: `${buffered === undefined ? '' : `${buffered.data}\n`}${rest}` };
    } else if (buffered !== undefined) {
      end = { truncated: true, partial: buffered.data };
    }
    return { events, end };
  }

  #feed(lines: string[]): SseEvent[] {
    if (lines.length === 0) return [];
    const received: EventSourceMessage[] = [];
    this.#sink = received;
    this.#fields.feed(lines.map((line) => `${line}\n`).join(''));
    return received.map((event) => {
      if (event.id !== undefined) this.#lastEventId = event.id;
      return { data: event.data, type: event.event ?? 'message', lastEventId: this.#lastEventId };
    });
  }
}
