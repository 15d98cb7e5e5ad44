// Component `json`: example JSON tools for toolhost.
//
// Built with componentize-js against wit/v0.2/tool.wit (world `tool-provider`), with the JS toolkit's
// defineMcpComponent: titles, annotations and an icon besides the 0.1.0 fields.
// Tools: json_query (a JSONPath subset, implemented here) and json_pointer
// (RFC 6901 get). Neither streams, prints or uses state.
//
// Tool failures are thrown as plain `{ code, message, details }` objects,
// which the bindings lift into the WIT `tool-error`; anything else thrown is
// turned into an `UNCAUGHT_EXCEPTION` tool-error so a bug never traps the component.

import { defineMcpComponent } from '../js-sdk/mcp.js';
import { isObject, parseArgs, requireString, toolError } from '../js-sdk/toolkit.js';

/** What the author says (the host lists what the grant allows, and never less cautious than this). */
const PURE = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };
/** A small braces icon. */
const ICON = [{ src: 'data:image/svg+xml;base64,PHN2ZyB4bWxucz0iaHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmciIHZpZXdCb3g9IjAgMCAxNiAxNiI+PHRleHQgeT0iMTIiPnt9PC90ZXh0Pjwvc3ZnPg==', mimeType: 'image/svg+xml', sizes: ['any'] }];

const hasOwn = (obj, key) => Object.prototype.hasOwnProperty.call(obj, key);

/**
 * The `document` argument: a JSON value, or a string holding JSON text (which
 * is parsed). To query a plain string, pass it as JSON text: "\"abc\"".
 */
function loadDocument(args) {
  if (!hasOwn(args, 'document')) {
    throw toolError('INVALID_ARGS', '"document" is required', { field: 'document' });
  }
  const doc = args.document;
  if (typeof doc !== 'string') return doc;
  try {
    return JSON.parse(doc);
  } catch (e) {
    throw toolError(
      'INVALID_JSON',
      `"document" is a string but not valid JSON text: ${e.message}`,
      { error: e.message },
    );
  }
}

const documentSchema = {
  description:
    'The JSON document: any JSON value, or a string holding JSON text (a string is always parsed as JSON text; to query a plain string pass it JSON-encoded).',
};

// ---------------------------------------------------------------------------
// JSONPath subset
//
//   $                  the root (required, first)
//   .name  ['name']  ["name"]   member of an object
//   [n]  [-n]          array element (negative counts from the end)
//   .*  [*]            every member value / element
//   ..name  ..*  ..[sel]        recursive descent: the selector applied to
//                      the node and all its descendants
//
// `.name` takes a name of letters, digits and '_' (not starting with a digit)
// or non-ASCII characters, as RFC 9535; any other key needs ['...'].
// Slices, unions and filters are not supported.

class PathError {
  constructor(position, message) {
    this.position = position;
    this.message = message;
  }
}

function isNameFirst(c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c === '_' || c.charCodeAt(0) >= 0x80;
}
function isDigit(c) {
  return c >= '0' && c <= '9';
}

/** Parse `path` into segments: { descendant: bool, sel: {kind, value} }. */
function parsePath(path) {
  let i = 0;
  const at = () => path[i];
  const fail = (msg, pos = i) => {
    throw new PathError(pos, msg);
  };
  const describe = (c) => (c === undefined ? 'end of path' : `'${c}'`);
  const skipWs = () => {
    while (i < path.length && ' \t\n\r'.includes(path[i])) i++;
  };

  const parseName = (after) => {
    const start = i;
    if (i >= path.length || !isNameFirst(at())) {
      if (i < path.length && isDigit(at())) {
        fail(`a name cannot start with a digit; use [${at()}...] for an array index or ['...'] for such a key`);
      }
      fail(`expected a member name or '*' after '${after}', found ${describe(at())}`);
    }
    while (i < path.length && (isNameFirst(at()) || isDigit(at()))) i++;
    const next = at();
    if (next !== undefined && next !== '.' && next !== '[') {
      fail(
        `unexpected ${describe(next)} in a name; a .name takes letters, digits and '_' only, so write other keys in brackets, e.g. ['${path.slice(start, i)}${next}...']`,
      );
    }
    return path.slice(start, i);
  };

  const parseQuoted = () => {
    const quote = at();
    const start = i;
    i++;
    let out = '';
    for (;;) {
      if (i >= path.length) fail(`unterminated string starting at position ${start}`, start);
      const c = at();
      if (c === quote) {
        i++;
        return out;
      }
      if (c.charCodeAt(0) < 0x20) fail('control character in string; escape it');
      if (c !== '\\') {
        out += c;
        i++;
        continue;
      }
      const e = path[i + 1];
      const simple = { b: '\b', f: '\f', n: '\n', r: '\r', t: '\t', '/': '/', '\\': '\\', "'": "'", '"': '"' };
      if (e !== undefined && hasOwn(simple, e)) {
        out += simple[e];
        i += 2;
      } else if (e === 'u') {
        const hex = path.slice(i + 2, i + 6);
        if (!/^[0-9a-fA-F]{4}$/.test(hex)) fail('invalid \\u escape: expected 4 hex digits');
        out += String.fromCharCode(parseInt(hex, 16));
        i += 6;
      } else {
        fail(`invalid escape '\\${e === undefined ? '' : e}' in string`);
      }
    }
  };

  const parseBracket = () => {
    const open = i;
    i++; // '['
    skipWs();
    let sel;
    const c = at();
    if (c === "'" || c === '"') {
      sel = { kind: 'name', value: parseQuoted() };
    } else if (c === '*') {
      i++;
      sel = { kind: 'wildcard' };
    } else if (c === '-' || (c !== undefined && isDigit(c))) {
      const m = /^-?(0|[1-9][0-9]*)/.exec(path.slice(i));
      if (m === null) fail(`expected digits after '-'`, i + 1);
      if (m[0] === '-0') fail('invalid index -0');
      if (isDigit(path[i + m[0].length] ?? '')) fail('array indexes cannot have leading zeros', i);
      const n = Number(m[0]);
      if (!Number.isSafeInteger(n)) fail('array index out of range');
      i += m[0].length;
      sel = { kind: 'index', value: n };
    } else if (c === '?') {
      fail('filter expressions ([?...]) are not supported');
    } else if (c === ':') {
      fail('array slices ([start:end]) are not supported');
    } else if (c === ']') {
      fail('empty brackets: expected a quoted name, an index or *');
    } else {
      fail(`expected a quoted name, an index or '*' after '[', found ${describe(c)}`);
    }
    skipWs();
    if (at() === ':') fail('array slices ([start:end]) are not supported');
    if (at() === ',') fail('unions ([a,b]) are not supported');
    if (at() !== ']') fail(`expected ']' to close '[' at position ${open}, found ${describe(at())}`);
    i++;
    return sel;
  };

  if (path.length === 0) fail('empty path; a path starts with $', 0);
  if (at() !== '$') fail(`a path must start with '$', found ${describe(at())}`, 0);
  i++;

  const segments = [];
  while (i < path.length) {
    const c = at();
    if (c === '.' && path[i + 1] === '.') {
      i += 2;
      const d = at();
      let sel;
      if (d === '*') {
        i++;
        sel = { kind: 'wildcard' };
      } else if (d === '[') {
        sel = parseBracket();
      } else {
        sel = { kind: 'name', value: parseName('..') };
      }
      segments.push({ descendant: true, sel });
    } else if (c === '.') {
      i++;
      if (at() === '*') {
        i++;
        segments.push({ descendant: false, sel: { kind: 'wildcard' } });
      } else {
        segments.push({ descendant: false, sel: { kind: 'name', value: parseName('.') } });
      }
    } else if (c === '[') {
      segments.push({ descendant: false, sel: parseBracket() });
    } else {
      fail(`unexpected ${describe(c)}; expected '.', '..' or '['`);
    }
  }
  return segments;
}

/** Push the results of one selector applied to `node` onto `out`. */
function select(node, sel, out) {
  switch (sel.kind) {
    case 'name':
      if (isObject(node) && hasOwn(node, sel.value)) out.push(node[sel.value]);
      break;
    case 'index':
      if (Array.isArray(node)) {
        const k = sel.value < 0 ? node.length + sel.value : sel.value;
        if (k >= 0 && k < node.length) out.push(node[k]);
      }
      break;
    case 'wildcard':
      // (a loop, not push(...xs): spreading a huge array overflows the argument limit)
      if (Array.isArray(node)) for (const v of node) out.push(v);
      else if (isObject(node)) for (const v of Object.values(node)) out.push(v);
      break;
  }
}

/** `node` and all its descendants, parents before children, in document order. */
function descendantsOf(node) {
  const out = [];
  const stack = [node];
  while (stack.length > 0) {
    const n = stack.pop();
    out.push(n);
    const kids = Array.isArray(n) ? n : isObject(n) ? Object.values(n) : [];
    for (let k = kids.length - 1; k >= 0; k--) stack.push(kids[k]);
  }
  return out;
}

function evaluate(doc, segments) {
  let nodes = [doc];
  for (const seg of segments) {
    const next = [];
    for (const n of nodes) {
      if (seg.descendant) {
        for (const d of descendantsOf(n)) select(d, seg.sel, next);
      } else {
        select(n, seg.sel, next);
      }
    }
    nodes = next;
  }
  return nodes;
}

function jsonQuery(argsText) {
  const args = parseArgs(argsText, ['document', 'path']);
  const path = requireString(args, 'path');
  let segments;
  try {
    segments = parsePath(path);
  } catch (e) {
    if (!(e instanceof PathError)) throw e;
    throw toolError(
      'INVALID_PATH',
      `invalid path at position ${e.position}: ${e.message}`,
      { path, position: e.position },
    );
  }
  const doc = loadDocument(args);
  const matches = evaluate(doc, segments);
  return { matches, count: matches.length };
}

// ---------------------------------------------------------------------------
// JSON Pointer (RFC 6901)

function jsonPointer(argsText) {
  const args = parseArgs(argsText, ['document', 'pointer']);
  const pointer = requireString(args, 'pointer');
  if (pointer !== '' && pointer[0] !== '/') {
    const hint = pointer[0] === '#' ? ' (the URI fragment form "#/..." is not supported)' : '';
    throw toolError('INVALID_POINTER', `a JSON pointer is "" or starts with "/"${hint}`, {
      pointer,
      position: 0,
    });
  }
  const bad = /~[^01]|~$/.exec(pointer);
  if (bad !== null) {
    throw toolError(
      'INVALID_POINTER',
      `invalid escape at position ${bad.index}: "~" must be followed by 0 or 1`,
      { pointer, position: bad.index },
    );
  }
  const doc = loadDocument(args);
  const tokens =
    pointer === '' ? [] : pointer.slice(1).split('/').map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~'));

  let node = doc;
  for (const t of tokens) {
    if (Array.isArray(node)) {
      // "-" (past the end) and anything but a canonical index find nothing.
      if (!/^(0|[1-9][0-9]*)$/.test(t)) return { found: false };
      const k = Number(t);
      if (k >= node.length) return { found: false };
      node = node[k];
    } else if (isObject(node)) {
      if (!hasOwn(node, t)) return { found: false };
      node = node[t];
    } else {
      return { found: false };
    }
  }
  return { found: true, value: node };
}

// ---------------------------------------------------------------------------
// Tool table and the exported `tool` interface

const TOOLS = [
  {
    name: 'json_query',
    description:
      "Select values from a JSON document with a JSONPath subset: $, .key, ['key'], [n] (negative from the end), [*] / .* wildcards and ..key recursive descent.",
    inputSchema: {
      type: 'object',
      properties: {
        document: documentSchema,
        path: {
          type: 'string',
          minLength: 1,
          description:
            "JSONPath starting with $, e.g. $.store.book[0].title, $..author, $['a key'][*], $.items[-1]. No slices, unions or filters.",
        },
      },
      required: ['document', 'path'],
      additionalProperties: false,
    },
    outputSchema: {
      type: 'object',
      properties: {
        matches: { type: 'array', description: 'The selected values, in document order.' },
        count: { type: 'integer', minimum: 0, description: 'Number of matches.' },
      },
      required: ['matches', 'count'],
      additionalProperties: false,
    },
    streaming: false,
    idempotent: true,
    title: 'JSON query',
    annotations: PURE,
    icons: ICON,
    run: jsonQuery,
  },
  {
    name: 'json_pointer',
    description: 'Get the value at an RFC 6901 JSON Pointer (e.g. /a/0/b~1c) in a JSON document.',
    inputSchema: {
      type: 'object',
      properties: {
        document: documentSchema,
        pointer: {
          type: 'string',
          description: 'RFC 6901 JSON Pointer: "" for the whole document, else "/"-separated tokens with ~0 for ~ and ~1 for /.',
        },
      },
      required: ['document', 'pointer'],
      additionalProperties: false,
    },
    outputSchema: {
      type: 'object',
      properties: {
        found: { type: 'boolean', description: 'Whether the pointer resolves to a value.' },
        value: { description: 'The value at the pointer; present only when found.' },
      },
      required: ['found'],
      additionalProperties: false,
    },
    streaming: false,
    idempotent: true,
    title: 'JSON pointer',
    annotations: PURE,
    icons: ICON,
    run: jsonPointer,
  },
];

export const tool = defineMcpComponent('json', TOOLS);
