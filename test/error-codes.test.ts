import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES, ToolhostError, toErrorData } from '../host/index.js';
import { root } from './helpers.js';

describe('the error codes', () => {
  it('are docs/errors.md\'s table, both ways: every code documented once with a meaning, no documented code that does not exist', () => {
    const page = readFileSync(join(root, 'docs', 'errors.md'), 'utf8');
    const table = page.slice(page.indexOf('| code | meaning |'), page.indexOf('\n\n', page.indexOf('| code | meaning |')));
    const rows = [...table.matchAll(/^\| `([A-Z_]+)` \| (.*) \|$/gm)];
    const documented = rows.map((match) => match[1]);
    expect(documented.sort()).toEqual(Object.keys(ERROR_CODES).sort());
    expect(new Set(documented).size, 'each code once').toBe(documented.length);
    for (const [, code, meaning] of rows) expect(meaning!.trim().length, `${code}'s meaning`).toBeGreaterThan(10);
    // The front door points at it.
    expect(readFileSync(join(root, 'README.md'), 'utf8')).toContain('](docs/errors.md)');
  });

  it('survive a boundary as data and are recognised by instanceof across copies', () => {
    const error = new ToolhostError('TOOL_ERROR', 'bad', { details: { code: 'X' }, callId: 'c' });
    const rebuilt = ToolhostError.fromData(JSON.parse(JSON.stringify(error)) as ReturnType<typeof error.toData>);
    expect(rebuilt).toMatchObject({ code: 'TOOL_ERROR', message: 'bad', details: { code: 'X' }, callId: 'c' });
    // An error from another copy of toolhost carries the same Symbol.for mark.
    const foreign = Object.assign(new Error('other copy'), { [Symbol.for('toolhost.error')]: true });
    expect(foreign instanceof ToolhostError).toBe(true);
    expect(new Error('plain') instanceof ToolhostError).toBe(false);
  });

  it('turn unknown throwables into INTERNAL without a stack trace', () => {
    const data = toErrorData(new TypeError('x is undefined'), 'call-9');
    expect(data).toEqual({ code: 'INTERNAL', message: 'internal error: x is undefined', callId: 'call-9' });
  });
});
