/**
 * Matching a resource URI against a component's URI template (RFC 6570
 * levels 1-3, as the MCP SDK's `UriTemplate.match` reads them), in time
 * linear in the URI for each template part, with both sizes capped before
 * anything is matched. This replaces the SDK's matcher on the host: it builds
 * a backtracking JS RegExp from the template, and a guest's template of
 * adjacent expressions (`{+a}{+b}{+c}...`) against a client's 56-character
 * URI that does not match held the main thread 134 s.
 *
 * What it guarantees:
 * - A template is compiled once (when the component's listing is read) and
 *   refused past `URI_TEMPLATE_LIMITS` (length, expressions, variables); a URI
 *   longer than `URI_TEMPLATE_LIMITS.uriLength` is never matched (the caller
 *   answers INVALID_INPUT before matching).
 * - One match costs at most `matchCost(compiled, uri)` = (parts + 1) x
 *   (URI length + 1) table cells, each O(1) (a literal part compares its text
 *   natively): no backtracking, whatever the template and URI. The caller
 *   knows that cost before matching and can refuse it (`core/surfaces.ts`
 *   gives each component a budget of cells per read).
 * - Same answers as the SDK's RegExp: which URIs match, and the values
 *   extracted (each expression takes the longest value that lets the rest
 *   match, as the RegExp's greedy backtracking does). The regular language is
 *   the SDK's: `{var}` one or more characters but `/` and `,`; `{var*}` and
 *   `{/var*}` such values joined by `,`; `{+var}`, `{#var}` one or more
 *   characters but line terminators (no `#` prefix, as the SDK); `{.var}` a
 *   `.` and a value; `{/var}` a `/` and a value; `{?a,b}` `?a=V&b=V`, `{&a}`
 *   `&a=V`, each V one or more characters but `&`, every name required, in
 *   order; `{a,b}` one value, named `a` (as the SDK).
 *
 * Where it differs from the SDK: a template the SDK would throw on or match
 * oddly never matches here (an unclosed `{`, an expression with no variable
 * name such as `{}` or `{?}`), and the caps above (the SDK allows 1 MB
 * templates of 10 000 expressions).
 *
 * What it does not do: expand templates, or decode percent-escapes in values
 * (the SDK does neither when matching).
 */

/** Sizes past which a template is refused and a URI is not matched. */
export const URI_TEMPLATE_LIMITS = Object.freeze({
  /** Characters (UTF-16 code units) in a URI matched against templates. */
  uriLength: 4096,
  /** Characters in a template. */
  templateLength: 1024,
  /** `{...}` expressions in a template. */
  expressions: 16,
  /** Variable names in a template (a `{?a,b,c}` expression has three). */
  variables: 32,
});

/** Which characters a value may hold. */
type ValueClass =
  | 'segment' // [^/,]
  | 'reserved' // . in a RegExp: anything but a line terminator
  | 'query' // [^&]
  | 'list'; // [^/,]+(,[^/,]+)*

type Part =
  | { kind: 'literal'; text: string }
  | { kind: 'value'; of: ValueClass; name: string; exploded: boolean };

/** A template ready to match: its parts, literals merged. */
export interface CompiledUriTemplate {
  readonly template: string;
  readonly parts: ReadonlyArray<Part>;
}

/** Why a template was refused. */
export interface UriTemplateRefusal {
  readonly reason: 'too-long' | 'too-many-expressions' | 'too-many-variables' | 'unclosed-expression' | 'no-variable' | 'not-a-string';
  readonly message: string;
}

const OPERATORS = new Set(['+', '#', '.', '/', '?', '&']);

/** Compile a template, or say why it cannot be matched. Cost: linear in the template (capped first). */
export function compileUriTemplate(template: unknown): CompiledUriTemplate | UriTemplateRefusal {
  if (typeof template !== 'string') return { reason: 'not-a-string', message: 'a URI template must be a string' };
  if (template.length > URI_TEMPLATE_LIMITS.templateLength) {
    return { reason: 'too-long', message: `the URI template has ${template.length} characters, over the limit of ${URI_TEMPLATE_LIMITS.templateLength}` };
  }
  const parts: Part[] = [];
  const literal = (text: string): void => {
    if (text === '') return;
    const last = parts[parts.length - 1];
    if (last?.kind === 'literal') parts[parts.length - 1] = { kind: 'literal', text: last.text + text };
    else parts.push({ kind: 'literal', text });
  };
  let expressions = 0;
  let variables = 0;
  let i = 0;
  while (i < template.length) {
    const open = template.indexOf('{', i);
    if (open === -1) {
      literal(template.slice(i));
      break;
    }
    literal(template.slice(i, open));
    const close = template.indexOf('}', open);
    if (close === -1) return { reason: 'unclosed-expression', message: `the URI template has an unclosed "{" at ${open}` };
    if (++expressions > URI_TEMPLATE_LIMITS.expressions) {
      return { reason: 'too-many-expressions', message: `the URI template has more than ${URI_TEMPLATE_LIMITS.expressions} expressions` };
    }
    const expression = template.slice(open + 1, close);
    const operator = OPERATORS.has(expression[0] ?? '') ? expression[0]! : '';
    const exploded = expression.includes('*');
    const names = expression.slice(operator.length).split(',').map((name) => name.replace('*', '').trim()).filter((name) => name.length > 0);
    if (names.length === 0) return { reason: 'no-variable', message: `the URI template's expression at ${open} names no variable` };
    variables += operator === '?' || operator === '&' ? names.length : 1;
    if (variables > URI_TEMPLATE_LIMITS.variables) {
      return { reason: 'too-many-variables', message: `the URI template has more than ${URI_TEMPLATE_LIMITS.variables} variables` };
    }
    if (operator === '?' || operator === '&') {
      names.forEach((name, index) => {
        literal(`${index === 0 ? operator : '&'}${name}=`);
        parts.push({ kind: 'value', of: 'query', name, exploded });
      });
    } else {
      if (operator === '.') literal('.');
      if (operator === '/') literal('/');
      const of: ValueClass = operator === '+' || operator === '#' ? 'reserved' : exploded && (operator === '' || operator === '/') ? 'list' : 'segment';
      parts.push({ kind: 'value', of, name: names[0]!, exploded });
    }
    i = close + 1;
  }
  return { template, parts };
}

/** Whether `compileUriTemplate` refused the template. */
export function isRefusal(compiled: CompiledUriTemplate | UriTemplateRefusal): compiled is UriTemplateRefusal {
  return 'reason' in compiled;
}

/** The table cells one match of `uri` against `compiled` may fill (known before matching). */
export function matchCost(compiled: CompiledUriTemplate, uriLength: number): number {
  return (compiled.parts.length + 1) * (uriLength + 1);
}

const SLASH = 0x2f;
const COMMA = 0x2c;
const AMPERSAND = 0x26;

/** Bits of `classify`: which value classes a character may be in. */
const IN_SEGMENT = 1; // [^/,]
const IN_RESERVED = 2; // anything but a line terminator
const IN_QUERY = 4; // [^&]
const IN_LIST = 8; // [^/] (commas only between values: see matchUriTemplate)
const IS_COMMA = 16;
const CLASS_BIT: Record<ValueClass, number> = { segment: IN_SEGMENT, reserved: IN_RESERVED, query: IN_QUERY, list: IN_LIST };

/** One byte of class bits per character of `uri` (one pass; the table walk then reads bytes). */
function classify(uri: string): Uint8Array {
  const bits = new Uint8Array(uri.length + 1);
  for (let p = 0; p < uri.length; p++) {
    const code = uri.charCodeAt(p);
    let b = IN_SEGMENT | IN_RESERVED | IN_QUERY | IN_LIST;
    if (code === SLASH) b &= ~(IN_SEGMENT | IN_LIST);
    else if (code === COMMA) b = (b & ~IN_SEGMENT) | IS_COMMA;
    else if (code === AMPERSAND) b &= ~IN_QUERY;
    else if (code === 0x0a || code === 0x0d || code === 0x2028 || code === 0x2029) b &= ~IN_RESERVED;
    bits[p] = b;
  }
  return bits;
}

/** Table cells a caller lets matches fill; `exceeded` is set when a match was refused for want of them. */
export interface MatchBudget {
  cells: number;
  exceeded?: boolean;
}

/**
 * Match `uri` against a compiled template: the variables' values (a `*`
 * variable holding commas as a list, as the SDK), or null. A URI longer than
 * `URI_TEMPLATE_LIMITS.uriLength` never matches (callers refuse it first).
 * With a `budget`, a match whose table (`matchCost`) would not fit in what is
 * left is not tried: null, and `budget.exceeded` set.
 */
export function matchUriTemplate(compiled: CompiledUriTemplate, uri: string, budget?: MatchBudget): Record<string, string | string[]> | null {
  if (uri.length > URI_TEMPLATE_LIMITS.uriLength) return null;
  const parts = compiled.parts;
  const first = parts[0];
  const last = parts[parts.length - 1];
  // Cheap refusals: the leading and trailing literals.
  if (first?.kind === 'literal' && !uri.startsWith(first.text)) return null;
  if (last?.kind === 'literal' && !uri.endsWith(last.text)) return null;
  if (budget) {
    const cost = matchCost(compiled, uri.length);
    if (cost > budget.cells) {
      budget.exceeded = true;
      return null;
    }
    budget.cells -= cost;
  }
  const n = uri.length;
  const width = n + 1;
  const m = parts.length;
  const bits = classify(uri);
  // ok[j * width + p] = 1 when parts j.. match uri[p..n) exactly.
  const ok = new Uint8Array((m + 1) * width);
  ok[m * width + n] = 1;
  for (let j = m - 1; j >= 0; j--) {
    const part = parts[j]!;
    const row = j * width;
    const next = (j + 1) * width;
    if (part.kind === 'literal') {
      const length = part.text.length;
      for (let p = n - length; p >= 0; p--) {
        if (ok[next + p + length] === 1 && uri.startsWith(part.text, p)) ok[row + p] = 1;
      }
    } else if (part.of === 'list') {
      // X[p]: a value starts at p (not a comma), then: end, more characters, or a comma and another value.
      for (let p = n - 1; p >= 0; p--) {
        if ((bits[p]! & IN_SEGMENT) === 0) continue;
        if ((ok[next + p + 1]! | ok[row + p + 1]!) === 1 || ((bits[p + 1]! & IS_COMMA) !== 0 && ok[row + p + 2] === 1)) ok[row + p] = 1;
      }
    } else {
      const bit = CLASS_BIT[part.of];
      for (let p = n - 1; p >= 0; p--) {
        if ((bits[p]! & bit) !== 0 && (ok[next + p + 1]! | ok[row + p + 1]!) === 1) ok[row + p] = 1;
      }
    }
  }
  if (ok[0] !== 1) return null;
  // Walk forward, each value taking the longest end the rest can follow (the RegExp's greedy choice).
  const values: Record<string, string | string[]> = {};
  let p = 0;
  for (let j = 0; j < m; j++) {
    const part = parts[j]!;
    if (part.kind === 'literal') {
      p += part.text.length;
      continue;
    }
    const next = (j + 1) * width;
    let end = -1;
    if (part.of === 'list') {
      for (let e = p + 1; e <= n; e++) {
        const b = bits[e - 1]!;
        if ((b & IN_LIST) === 0) break;
        if ((b & IS_COMMA) !== 0) {
          if (e - 1 === p || (bits[e - 2]! & IS_COMMA) !== 0) break;
          continue;
        }
        if (ok[next + e] === 1) end = e;
      }
    } else {
      const bit = CLASS_BIT[part.of];
      for (let e = p + 1; e <= n && (bits[e - 1]! & bit) !== 0; e++) {
        if (ok[next + e] === 1) end = e;
      }
    }
    const value = uri.slice(p, end);
    values[part.name] = part.exploded && value.includes(',') ? value.split(',') : value;
    p = end;
  }
  return values;
}
