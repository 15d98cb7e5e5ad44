/**
 * SEP-2243 custom headers on the 2026-07-28 leg: a tool's input schema may mark a property with
 * `x-mcp-header: NAME`, and a client then mirrors that argument into an `Mcp-Param-NAME` header (the
 * value as is, or `=?base64?…?=` for what a header cannot carry), so that gateways can route on it
 * without reading the body. The server checks that the header says what the body says: a body value
 * with no header, a header that disagrees, or a malformed Base64 value is refused with HTTP 400 and
 * JSON-RPC -32020 (HeaderMismatch), before the call starts.
 *
 * Guarantees: a declaration counts only where the spec allows it (on a chain of `properties` from the
 * root, primitive-typed, an RFC 9110 token, unique regardless of case), and a schema has at most
 * {@link MAX_PARAM_HEADERS}; a tool whose schema declares one wrongly, or more, has none checked (as if
 * it declared none). The scan of a schema is linear in the schema (capped at registration; paths are
 * parent links, spelled out only for the declarations) and done once per schema object; the check of
 * a request is linear in its declarations' paths and its header values (capped with the request).
 * Does not: check headers on the 2025-11-25 leg (the revision has none), or for a tool the registry
 * does not know (the call's own path refuses it).
 */

/** One `x-mcp-header` declaration: the header's name (after `Mcp-Param-`), where the argument sits, and its type. */
export interface ParamHeader {
  header: string;
  path: readonly string[];
  type: 'string' | 'integer' | 'number' | 'boolean';
}

/** A request refused: what the JSON-RPC error says (code -32020, HTTP 400). */
export interface ParamHeaderMismatch {
  message: string;
  data: { reason: 'param-header-missing' | 'param-header-invalid-encoding' | 'param-header-mismatch'; header: string };
}

export const HEADER_MISMATCH = -32020;
/** Declarations one schema may carry (each is a header a client sends with every call). */
export const MAX_PARAM_HEADERS = 64;
const KEYWORD = 'x-mcp-header';
/** RFC 9110 `token`. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const PRIMITIVES = new Set(['string', 'integer', 'number', 'boolean']);
const BASE64_PREFIX = '=?base64?';
const BASE64_SUFFIX = '?=';
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

const scanned = new WeakMap<object, readonly ParamHeader[]>();

/** The declarations of an input schema (none when it has none or declares one where the spec does not allow it). */
export function paramHeadersOf(schema: unknown): readonly ParamHeader[] {
  if (typeof schema !== 'object' || schema === null) return [];
  let found = scanned.get(schema);
  if (found === undefined) {
    found = scan(schema as Record<string, unknown>) ?? [];
    scanned.set(schema, found);
  }
  return found;
}

/** Where a schema node sits: its property name and its parent's place (undefined: the root). */
interface Place {
  name: string;
  parent: Place | undefined;
}

function pathOf(place: Place | undefined): string[] {
  const path: string[] = [];
  for (let at = place; at !== undefined; at = at.parent) path.push(at.name);
  return path.reverse();
}

/** Walk every schema node; a declaration off the `properties` chain (or malformed, or one too many) makes the schema's undefined. */
function scan(root: Record<string, unknown>): ParamHeader[] | undefined {
  const out: ParamHeader[] = [];
  const names = new Set<string>();
  let valid = true;
  // An explicit stack: a guest's schema may be deep.
  const stack: Array<{ node: unknown; place: Place | undefined; onChain: boolean }> = [{ node: root, place: undefined, onChain: true }];
  while (stack.length > 0 && valid) {
    const { node, place, onChain } = stack.pop()!;
    if (typeof node !== 'object' || node === null) continue;
    if (Array.isArray(node)) {
      for (const item of node) stack.push({ node: item, place, onChain: false });
      continue;
    }
    const schema = node as Record<string, unknown>;
    if (Object.hasOwn(schema, KEYWORD)) {
      const header = schema[KEYWORD];
      const type = schema.type;
      const lower = typeof header === 'string' ? header.toLowerCase() : '';
      if (!onChain || place === undefined || typeof header !== 'string' || !TOKEN.test(header) || typeof type !== 'string' || !PRIMITIVES.has(type) || names.has(lower) || out.length >= MAX_PARAM_HEADERS) {
        valid = false;
        break;
      }
      names.add(lower);
      out.push({ header, path: pathOf(place), type: type as ParamHeader['type'] });
    }
    for (const [keyword, value] of Object.entries(schema)) {
      if (keyword === 'properties' && typeof value === 'object' && value !== null && !Array.isArray(value)) {
        for (const [name, property] of Object.entries(value as Record<string, unknown>)) stack.push({ node: property, place: { name, parent: place }, onChain });
      } else if (keyword !== KEYWORD) {
        stack.push({ node: value, place, onChain: false });
      }
    }
  }
  return valid ? out : undefined;
}

/**
 * Check a `tools/call`'s `Mcp-Param-*` headers against its arguments: undefined when they agree.
 * `header(name)` reads a request header by its lower-case name.
 */
export function checkParamHeaders(declarations: readonly ParamHeader[], args: unknown, header: (name: string) => string | undefined): ParamHeaderMismatch | undefined {
  for (const declaration of declarations) {
    const body = valueAt(args, declaration.path);
    // A value absent or null: the client sends no header, and one sent is ignored.
    if (body === undefined || body === null) continue;
    const text = typeof body === 'string' || typeof body === 'number' || typeof body === 'boolean' ? String(body) : undefined;
    if (text === undefined) continue;
    const name = `Mcp-Param-${declaration.header}`;
    const raw = header(name.toLowerCase());
    if (raw === undefined) return mismatch('param-header-missing', name, `the body carries ${declaration.path.join('.')} but the ${name} header is absent`);
    const decoded = decode(raw.trim());
    if (decoded === undefined) return mismatch('param-header-invalid-encoding', name, `the ${name} header carries an invalid Base64 value`);
    const same = declaration.type === 'integer' || declaration.type === 'number' ? decoded.trim() !== '' && Number(decoded) === Number(text) : decoded === text;
    if (!same) return mismatch('param-header-mismatch', name, `the ${name} header does not match ${declaration.path.join('.')} in the body`);
  }
  return undefined;
}

/** A header value: Base64 inside the sentinel (canonical, UTF-8), else literal; undefined when the Base64 is bad. */
function decode(value: string): string | undefined {
  if (!(value.startsWith(BASE64_PREFIX) && value.endsWith(BASE64_SUFFIX) && value.length >= BASE64_PREFIX.length + BASE64_SUFFIX.length)) return value;
  const payload = value.slice(BASE64_PREFIX.length, value.length - BASE64_SUFFIX.length);
  if (!BASE64.test(payload)) return undefined;
  const bytes = Buffer.from(payload, 'base64');
  // Canonical: no stray bits in the last character.
  if (bytes.toString('base64') !== payload) return undefined;
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
}

function valueAt(root: unknown, path: readonly string[]): unknown {
  let node = root;
  for (const key of path) {
    if (typeof node !== 'object' || node === null || !Object.hasOwn(node, key)) return undefined;
    node = (node as Record<string, unknown>)[key];
  }
  return node;
}

function mismatch(reason: ParamHeaderMismatch['data']['reason'], header: string, message: string): ParamHeaderMismatch {
  return { message: `HeaderMismatch: ${message}`, data: { reason, header } };
}
