/**
 * The incremental parsers behind the HTTP streaming tool: SSE (WHATWG event
 * stream rules) and NDJSON, fed in every possible split of their input.
 */
import { describe, expect, it } from 'vitest';
import { LineSplitter } from '../host/tools/line-splitter.js';
import { NdjsonParser, type NdjsonLine } from '../host/tools/ndjson-parser.js';
import { SseParser, type SseEvent } from '../host/tools/sse-parser.js';

const encode = (text: string): Uint8Array => new TextEncoder().encode(text);

/** Feed `bytes` to a fresh SSE parser cut at the given offsets. */
function sse(bytes: Uint8Array, cuts: number[] = []): { events: SseEvent[]; end: ReturnType<SseParser['end']>['end']; parser: SseParser } {
  const parser = new SseParser();
  const events: SseEvent[] = [];
  let from = 0;
  for (const cut of [...cuts, bytes.length]) {
    events.push(...parser.push(bytes.subarray(from, cut)));
    from = cut;
  }
  const last = parser.end();
  events.push(...last.events);
  return { events, end: last.end, parser };
}

function ndjson(bytes: Uint8Array, cuts: number[] = []): { lines: NdjsonLine[]; end: ReturnType<NdjsonParser['end']>['end'] } {
  const parser = new NdjsonParser();
  const lines: NdjsonLine[] = [];
  let from = 0;
  for (const cut of [...cuts, bytes.length]) {
    lines.push(...parser.push(bytes.subarray(from, cut)));
    from = cut;
  }
  const last = parser.end();
  lines.push(...last.lines);
  return { lines, end: last.end };
}

describe('SseParser', () => {
  const stream =
    '\uFEFF: a comment first\r\n' +
    'retry: 1500\r\n' +
    'id: 7\r\n' +
    'event: greeting\r\n' +
    'data: line one\r\n' +
    'data:line two\r\n' +
    'data:  three (two spaces, one kept)\r\n' +
    '\r\n' +
    'data: {"n":1}\n' +
    'ignored-field: x\n' +
    '\n' +
    ': keep-alive\r' +
    'data: héllo wörld ✓ 🎉\r' +
    '\r' +
    'data\n' +
    '\n' +
    'event: only-an-event\nid: 8\n\n' +
    'data: last\n\n';
  const expected: SseEvent[] = [
    { data: 'line one\nline two\n three (two spaces, one kept)', type: 'greeting', lastEventId: '7' },
    { data: '{"n":1}', type: 'message', lastEventId: '7' },
    { data: 'héllo wörld ✓ 🎉', type: 'message', lastEventId: '7' },
    { data: '', type: 'message', lastEventId: '7' },
    // The WHATWG rules would say '8' (the id of the data-less event before it); eventsource-parser keeps
    // only the ids of dispatched events. The HTTP tool uses only `data`; see sse-parser.ts.
    { data: 'last', type: 'message', lastEventId: '7' },
  ];

  it('parses fields, comments, multi-line data and every line ending', () => {
    const result = sse(encode(stream));
    expect(result.events).toEqual(expected);
    expect(result.end).toEqual({ truncated: false });
    expect(result.parser.retry).toBe(1500);
    expect(result.parser.lastEventId).toBe('7'); // '8' under the WHATWG rules, as above
  });

  it('gives the same events however the bytes are split (every single cut, and byte by byte)', () => {
    const bytes = encode(stream);
    for (let cut = 0; cut <= bytes.length; cut++) {
      expect(sse(bytes, [cut]).events, `cut at ${cut}`).toEqual(expected);
    }
    const everyByte = Array.from({ length: bytes.length }, (_, i) => i);
    expect(sse(bytes, everyByte).events).toEqual(expected);
  });

  it('treats \\r then \\n in the next chunk as one line ending, and a lone \\r as one too', () => {
    const parser = new SseParser();
    expect(parser.push('data: a\r')).toEqual([]);
    expect(parser.push('\ndata: b\r')).toEqual([]);
    // The blank line: \r ends "data: b", then \r\n is an empty line.
    expect(parser.push('\r\n')).toEqual([{ data: 'a\nb', type: 'message', lastEventId: '' }]);
    expect(parser.end().end).toEqual({ truncated: false });
  });

  it('reports an event cut off by the end of the stream instead of dropping it silently', () => {
    expect(sse(encode('data: one\n\ndata: two\n')).end).toEqual({ truncated: true, partial: 'two' });
    expect(sse(encode('data: one\n\ndata: tw')).end).toEqual({ truncated: true, partial: 'data: tw' });
    expect(sse(encode('data: one\n\ndata: a\ndata: b')).end).toEqual({ truncated: true, partial: 'a\ndata: b' });
    // An unterminated comment or a stream that ends between events is complete.
    expect(sse(encode('data: one\n\n: bye')).end).toEqual({ truncated: false });
    expect(sse(encode('data: one\n\n')).end).toEqual({ truncated: false });
    expect(sse(encode('')).end).toEqual({ truncated: false });
  });

  it('ignores an id containing NUL and a non-numeric retry', () => {
    // The first event carries data so that its id is kept (an id on a data-less event is not: see above).
    const result = sse(encode('id: 1\nretry: 10\ndata: w\n\nid: a\u0000b\nretry: 5s\ndata: x\n\n'));
    expect(result.events).toEqual([{ data: 'w', type: 'message', lastEventId: '1' }, { data: 'x', type: 'message', lastEventId: '1' }]);
    expect(result.parser.retry).toBe(10);
  });

  it('decodes a multi-byte character split across chunks, and invalid bytes as U+FFFD', () => {
    const bytes = encode('data: é\n\n');
    const split = bytes.indexOf(0xc3) + 1;
    expect(sse(bytes, [split]).events[0]?.data).toBe('é');
    const invalid = new Uint8Array([...encode('data: '), 0xff, ...encode('\n\n')]);
    expect(sse(invalid).events[0]?.data).toBe('\uFFFD');
  });
});

describe('NdjsonParser', () => {
  const stream = '{"a":1}\r\n\r\n  \n[1,2]\nnot json\r\n"text"\n\n42';
  const expected: NdjsonLine[] = [
    { value: { a: 1 }, json: true },
    { value: [1, 2], json: true },
    { value: 'not json', json: false },
    { value: 'text', json: true },
    { value: 42, json: true },
  ];

  it('skips empty lines, strips \\r, parses JSON and keeps other lines as text', () => {
    const result = ndjson(encode(stream));
    expect(result.lines).toEqual(expected);
    expect(result.end).toEqual({ truncated: false });
  });

  it('gives the same lines however the bytes are split', () => {
    const bytes = encode(stream);
    for (let cut = 0; cut <= bytes.length; cut++) {
      // A cut inside the final "42" only delays it: the end delivers the whole line.
      expect(ndjson(bytes, [cut]).lines, `cut at ${cut}`).toEqual(expected);
    }
    expect(ndjson(bytes, Array.from({ length: bytes.length }, (_, i) => i)).lines).toEqual(expected);
  });

  it('delivers a final line without its newline when it is JSON, and reports a cut one', () => {
    expect(ndjson(encode('{"a":1}\n{"b":2}'))).toEqual({ lines: [{ value: { a: 1 }, json: true }, { value: { b: 2 }, json: true }], end: { truncated: false } });
    expect(ndjson(encode('{"a":1}\n{"b":2}\r'))).toEqual({ lines: [{ value: { a: 1 }, json: true }, { value: { b: 2 }, json: true }], end: { truncated: false } });
    expect(ndjson(encode('{"a":1}\n{"b":'))).toEqual({ lines: [{ value: { a: 1 }, json: true }], end: { truncated: true, partial: '{"b":' } });
    expect(ndjson(encode('{"a":1}\n   '))).toEqual({ lines: [{ value: { a: 1 }, json: true }], end: { truncated: false } });
  });
});

describe('LineSplitter', () => {
  it('splits on \\n only in NDJSON mode (a lone \\r stays in the line)', () => {
    const lines = new LineSplitter({ cr: false });
    expect(lines.push('a\rb\r')).toEqual([]);
    expect(lines.push('\nc')).toEqual(['a\rb']);
    expect(lines.end()).toEqual({ lines: [], rest: 'c' });
  });
});
