/**
 * An upper bound on the size of the RE2 program a pattern compiles to, read
 * from its text without compiling it: RE2JS spends ~20 µs an instruction
 * compiling (`.{1,1000}` eleven times over: 22,000 instructions, 0.5 s), and
 * matching a character may cost one step per instruction.
 *
 * Guarantees: linear in the pattern's length, no recursion; the bound is at
 * least RE2's own count for every pattern RE2 accepts (a literal, class or
 * escape is one instruction; a group adds two; `|` adds one; `*`, `+`, `?`
 * add one; `{n,m}` repeats its operand max(n, m) + 1 times with one more each).
 * Does not: check that RE2 accepts the pattern (compiling it does).
 */

/** Repeats counted for `{n,}` beyond n (RE2 compiles it as n copies and a star). */
const OPEN_REPEAT_EXTRA = 1;

/** The bound on `pattern`'s RE2 instruction count (see the header). */
export function re2ProgramBound(pattern: string): number {
  // One frame per open group: the size of the sequence so far and of its last atom (what a quantifier repeats).
  const frames: Array<{ total: number; last: number }> = [{ total: 0, last: 0 }];
  let i = 0;
  const atom = (size: number): void => {
    const frame = frames[frames.length - 1]!;
    frame.total += size;
    frame.last = size;
  };
  const repeat = (times: number): void => {
    const frame = frames[frames.length - 1]!;
    const grown = (frame.last + 2) * times;
    frame.total += grown - frame.last;
    frame.last = grown;
  };
  while (i < pattern.length) {
    const char = pattern[i]!;
    if (char === '\\') {
      // An escape: one instruction, whatever it spells (\d, \p{L}, \x{41}, \Q..\E is bounded by its characters).
      i += 2;
      if (pattern[i - 1] === 'p' || pattern[i - 1] === 'P' || pattern[i - 1] === 'x') if (pattern[i] === '{') i = skipPast(pattern, i, '}');
      atom(1);
    } else if (char === '[') {
      i = classEnd(pattern, i);
      atom(1);
    } else if (char === '(') {
      frames.push({ total: 0, last: 0 });
      i += 1;
      if (pattern[i] === '?') i = groupBody(pattern, i + 1);
    } else if (char === ')') {
      const inner = frames.length > 1 ? frames.pop()! : { total: 0, last: 0 };
      atom(inner.total + 2);
      i += 1;
    } else if (char === '|') {
      const frame = frames[frames.length - 1]!;
      frame.total += 1;
      frame.last = 0;
      i += 1;
    } else if (char === '*' || char === '+' || char === '?') {
      repeat(1);
      i += 1;
      if (pattern[i] === '?') i += 1;
    } else if (char === '{') {
      const match = /^\{(\d{1,9})(,(\d{0,9}))?\}/.exec(pattern.slice(i, i + 24));
      if (match) {
        const low = Number(match[1]);
        const high = match[2] === undefined ? low : match[3] === '' ? low + OPEN_REPEAT_EXTRA : Number(match[3]);
        repeat(Math.max(low, high) + 1);
        i += match[0].length;
        if (pattern[i] === '?') i += 1;
      } else {
        atom(1);
        i += 1;
      }
    } else {
      atom(1);
      i += 1;
    }
  }
  let total = 4; // the anchoring and match instructions around every program
  for (const frame of frames) total += frame.total;
  return total;
}

/** The index after the first `close` from `from`. */
function skipPast(pattern: string, from: number, close: string): number {
  const at = pattern.indexOf(close, from);
  return at < 0 ? pattern.length : at + 1;
}

/** Where a group's body starts, after `(?` at `from - 1`: past flags and `:`, a name's `>`; at the `)` of `(?i)`. */
function groupBody(pattern: string, from: number): number {
  let j = from;
  while (j < pattern.length && /[imsU-]/.test(pattern[j]!)) j += 1;
  if (pattern[j] === ':') return j + 1;
  if (pattern[j] === 'P' || pattern[j] === '<') return skipPast(pattern, j, '>');
  return j;
}

/** The index after the `]` that closes the class opened at `from`. */
function classEnd(pattern: string, from: number): number {
  let i = from + 1;
  if (pattern[i] === '^') i += 1;
  if (pattern[i] === ']') i += 1;
  while (i < pattern.length && pattern[i] !== ']') i += pattern[i] === '\\' ? 2 : pattern.startsWith('[:', i) ? Math.max(2, pattern.indexOf(':]', i) - i + 2) : 1;
  return i + 1;
}
