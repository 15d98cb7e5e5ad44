// Component `text`: example text tools for toolhost.
//
// Built with componentize-js against wit/v0.2/tool.wit (world `tool-provider`), with the JS toolkit's
// defineMcpComponent: titles, the author's annotations and an icon; results as in 0.1.0 (a JSON value).
// Tools: word_count (streaming, uses conversation state), regex_search
// (streaming), js_echo (trivial, for measuring host overhead).
//
// Conventions used by every toolhost JS guest:
// - `call` receives the tool name and its arguments as JSON text and returns
//   the result as JSON text.
// - A tool failure is reported by throwing a plain object
//   `{ code, message, details }` (details: JSON text or undefined), which the
//   bindings lift into the WIT `tool-error`. Anything else thrown is turned
//   into an `UNCAUGHT_EXCEPTION` tool-error so a bug never traps the component.
// - Example tools never print: stdout/stderr are for debugging only.

import {
  progress,
  delta,
  log,
  getState,
  setState,
  cancelled,
} from 'toolhost:tool/host@0.2.0';

import { defineMcpComponent } from '../js-sdk/mcp.js';
import { parseArgs, requireString, toolError } from '../js-sdk/toolkit.js';

// ---------------------------------------------------------------------------
// word_count

const CHUNK_SIZE = 4096; // UTF-16 code units per chunk
const TOTAL_KEY = 'text.total_words';

const wordCountInput = {
  type: 'object',
  description: 'Text to count.',
  properties: {
    text: { type: 'string', description: 'The text to count words, lines and characters in.' },
  },
  required: ['text'],
  additionalProperties: false,
};

const wordCountOutput = {
  type: 'object',
  properties: {
    words: {
      type: 'integer',
      minimum: 0,
      description: 'Runs of non-whitespace characters.',
    },
    lines: {
      type: 'integer',
      minimum: 0,
      description: 'Lines: newline count, plus one if the text does not end with a newline (0 for empty text).',
    },
    characters: {
      type: 'integer',
      minimum: 0,
      description: 'Unicode code points.',
    },
    conversation_total_words: {
      type: ['integer', 'null'],
      minimum: 0,
      description: `Running total of words counted in this conversation (state key "${TOTAL_KEY}"), including this call; null when the host offers no conversation state.`,
    },
  },
  required: ['words', 'lines', 'characters', 'conversation_total_words'],
  additionalProperties: false,
};

/** Split `text` into chunks of about CHUNK_SIZE, never inside a surrogate pair. */
function chunksOf(text) {
  const chunks = [];
  let start = 0;
  while (start < text.length) {
    let end = Math.min(start + CHUNK_SIZE, text.length);
    const last = text.charCodeAt(end - 1);
    if (end < text.length && last >= 0xd800 && last <= 0xdbff) end += 1;
    chunks.push(text.slice(start, end));
    start = end;
  }
  if (chunks.length === 0) chunks.push('');
  return chunks;
}

function countMatches(s, re) {
  const m = s.match(re);
  return m === null ? 0 : m.length;
}

function readTotal() {
  const raw = getState(TOTAL_KEY);
  if (raw === undefined) return 0;
  let n;
  try {
    n = JSON.parse(raw);
  } catch {
    n = NaN;
  }
  if (!Number.isSafeInteger(n) || n < 0) {
    log('warn', `word_count: ignoring unusable state ${TOTAL_KEY}=${raw.slice(0, 64)}`);
    return 0;
  }
  return n;
}

function wordCount(argsText) {
  const args = parseArgs(argsText, ['text']);
  const text = requireString(args, 'text');

  const chunks = chunksOf(text);
  let words = 0;
  let newlines = 0;
  let characters = 0;
  let prevEndsInWord = false;

  for (let i = 0; i < chunks.length; i++) {
    if (cancelled()) {
      throw toolError('CANCELLED', `word_count cancelled after ${i} of ${chunks.length} chunks`, {
        chunks_done: i,
        chunks: chunks.length,
      });
    }
    const chunk = chunks[i];
    words += countMatches(chunk, /\S+/g);
    // A word split across the chunk boundary was counted twice.
    if (prevEndsInWord && /^\S/.test(chunk)) words -= 1;
    prevEndsInWord = /\S$/.test(chunk);
    newlines += countMatches(chunk, /\n/g);
    characters += chunk.length - countMatches(chunk, /[\uD800-\uDBFF][\uDC00-\uDFFF]/g);

    progress(((i + 1) / chunks.length) * 100, `chunk ${i + 1}/${chunks.length}`);
    delta(JSON.stringify({ chunk: i + 1, chunks: chunks.length, words_so_far: words }));
  }

  const lines = text.length === 0 ? 0 : newlines + (text.endsWith('\n') ? 0 : 1);

  // Conversation state: a running total of words. Without conversation state
  // (set-state fails, e.g. no conversation) the count itself still succeeds.
  let total = readTotal() + words;
  try {
    setState(TOTAL_KEY, JSON.stringify(total));
  } catch (e) {
    log('warn', `word_count: could not save ${TOTAL_KEY}: ${String(e)}`);
    total = null;
  }

  return { words, lines, characters, conversation_total_words: total };
}

// ---------------------------------------------------------------------------
// regex_search

const DEFAULT_MAX_MATCHES = 1000;
const MAX_MAX_MATCHES = 10000;
const ALLOWED_FLAGS = 'imsuvy';

const regexInput = {
  type: 'object',
  description: 'A JavaScript regular expression search.',
  properties: {
    pattern: {
      type: 'string',
      description:
        'JavaScript (ECMAScript) regular expression source, without slashes. Unicode property escapes (\\p{...}) and v-flag set operations are not available.',
    },
    text: { type: 'string', description: 'The text to search.' },
    flags: {
      type: 'string',
      pattern: `^[${ALLOWED_FLAGS}]*$`,
      description: 'Regex flags from "imsuvy" (i: ignore case, m: multiline, s: dotAll, u/v: unicode, y: sticky). "g" is implied.',
    },
    max_matches: {
      type: 'integer',
      minimum: 1,
      maximum: MAX_MAX_MATCHES,
      default: DEFAULT_MAX_MATCHES,
      description: `Stop after this many matches (default ${DEFAULT_MAX_MATCHES}, at most ${MAX_MAX_MATCHES}).`,
    },
  },
  required: ['pattern', 'text'],
  additionalProperties: false,
};

const regexOutput = {
  type: 'object',
  properties: {
    matches: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          match: { type: 'string', description: 'The matched text.' },
          index: {
            type: 'integer',
            minimum: 0,
            description: 'Offset of the match in the text, in UTF-16 code units (JavaScript string index).',
          },
          groups: {
            type: 'array',
            items: { type: ['string', 'null'] },
            description: 'Capture groups 1..n in order; null for a group that did not participate.',
          },
          named_groups: {
            type: 'object',
            additionalProperties: { type: ['string', 'null'] },
            description: 'Named capture groups; present only when the pattern has any.',
          },
        },
        required: ['match', 'index', 'groups'],
        additionalProperties: false,
      },
    },
    count: { type: 'integer', minimum: 0, description: 'Number of matches returned.' },
    truncated: {
      type: 'boolean',
      description: 'True when more matches exist than were returned (the search stopped at max_matches).',
    },
  },
  required: ['matches', 'count', 'truncated'],
  additionalProperties: false,
};

function regexSearch(argsText) {
  const args = parseArgs(argsText, ['pattern', 'text', 'flags', 'max_matches']);
  const pattern = requireString(args, 'pattern');
  const text = requireString(args, 'text');

  let flags = '';
  if (args.flags !== undefined) {
    flags = requireString(args, 'flags');
    for (const f of flags) {
      if (!ALLOWED_FLAGS.includes(f)) {
        const why = f === 'g' ? ' ("g" is always on)' : f === 'd' ? ' (indices are not supported)' : '';
        throw toolError('INVALID_ARGS', `unsupported regex flag "${f}"${why}; allowed: "${ALLOWED_FLAGS}"`, {
          field: 'flags',
        });
      }
    }
  }

  let max = DEFAULT_MAX_MATCHES;
  if (args.max_matches !== undefined) {
    max = args.max_matches;
    if (!Number.isInteger(max) || max < 1 || max > MAX_MAX_MATCHES) {
      throw toolError('INVALID_ARGS', `"max_matches" must be an integer in 1..${MAX_MAX_MATCHES}`, {
        field: 'max_matches',
      });
    }
  }

  let re;
  try {
    re = new RegExp(pattern, flags + 'g');
  } catch (e) {
    let why = String(e && e.message ? e.message : e).replace(/\.+$/, '');
    // The engine (StarlingMonkey, built without ICU) has no Unicode property data.
    if (/\\[pP]\{/.test(pattern)) why += ' (Unicode property escapes \\p{...} are not supported here)';
    throw toolError(
      'INVALID_PATTERN',
      `invalid regular expression /${pattern}/${flags}: ${why}. Patterns use JavaScript regex syntax; escape special characters such as ( ) [ ] { } . * + ? ^ $ | \\ with a backslash.`,
      { pattern, flags, error: why },
    );
  }
  const unicode = re.unicode || re.unicodeSets;

  const matches = [];
  let truncated = false;
  let m;
  while ((m = re.exec(text)) !== null) {
    if (matches.length === max) {
      truncated = true;
      break;
    }
    const item = {
      match: m[0],
      index: m.index,
      groups: m.slice(1).map((g) => (g === undefined ? null : g)),
    };
    if (m.groups !== undefined) {
      const named = {};
      for (const [k, v] of Object.entries(m.groups)) named[k] = v === undefined ? null : v;
      item.named_groups = named;
    }
    matches.push(item);
    delta(JSON.stringify(item));

    // A zero-length match leaves lastIndex in place: step past it (by a whole
    // code point in unicode mode) so the loop always advances.
    if (m[0].length === 0) {
      const i = re.lastIndex;
      const c = text.charCodeAt(i);
      const pair =
        unicode && c >= 0xd800 && c <= 0xdbff && i + 1 < text.length &&
        text.charCodeAt(i + 1) >= 0xdc00 && text.charCodeAt(i + 1) <= 0xdfff;
      re.lastIndex = i + (pair ? 2 : 1);
      if (re.lastIndex > text.length) break;
    }
    if (matches.length % 100 === 0 && cancelled()) {
      throw toolError('CANCELLED', `regex_search cancelled after ${matches.length} matches`, {
        matches_so_far: matches.length,
      });
    }
  }

  return { matches, count: matches.length, truncated };
}

// ---------------------------------------------------------------------------
// js_echo

// Deliberately open: any JSON object is echoed back verbatim.
const echoSchema = {
  type: 'object',
  description: 'Any JSON object; it is returned unchanged.',
  additionalProperties: true,
};

// ---------------------------------------------------------------------------
// Tool table and the exported `tool` interface

/** What the author says: nothing outside the call changes (conversation state is the conversation's), no network. */
const CLOSED = { readOnlyHint: true, destructiveHint: false, openWorldHint: false };
/** A small "T" (SVG). */
const ICON = [{ src: 'data:image/svg+xml;base64,PHN2ZyB4bWxucz0iaHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmciIHZpZXdCb3g9IjAgMCAxNiAxNiI+PHRleHQgeT0iMTIiPlQ8L3RleHQ+PC9zdmc+', mimeType: 'image/svg+xml', sizes: ['any'] }];

const TOOLS = [
  {
    name: 'word_count',
    title: 'Word count',
    annotations: { ...CLOSED, idempotentHint: false },
    icons: ICON,
    description:
      'Count the words, lines and characters (code points) of a text, streaming per-chunk progress, and keep a running word total for the conversation.',
    inputSchema: wordCountInput,
    outputSchema: wordCountOutput,
    streaming: true,
    idempotent: false, // updates the conversation's running total
    run: (args) => JSON.stringify(wordCount(args)),
  },
  {
    name: 'regex_search',
    title: 'Regex search',
    annotations: { ...CLOSED, idempotentHint: true },
    icons: ICON,
    description:
      'Find the matches of a JavaScript regular expression in a text: each match, its index and capture groups. Streams one delta per match.',
    inputSchema: regexInput,
    outputSchema: regexOutput,
    streaming: true,
    idempotent: true,
    run: (args) => JSON.stringify(regexSearch(args)),
  },
  {
    name: 'js_echo',
    title: 'Echo (JS)',
    annotations: { ...CLOSED, idempotentHint: true },
    icons: ICON,
    description: 'Return the arguments unchanged (measures host overhead).',
    inputSchema: echoSchema,
    outputSchema: echoSchema,
    streaming: false,
    idempotent: true,
    run: (args) => args,
  },
];

export const tool = defineMcpComponent('text', TOOLS);
