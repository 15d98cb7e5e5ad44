/**
 * SEP-2243 `x-mcp-header` declarations and the `Mcp-Param-*` check (host/servers/mcp-param-headers.ts): which
 * declarations count, and when a header agrees with the body. The HTTP round trip, with the conformance
 * component's tool, is in test/conformance-component.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { checkParamHeaders, MAX_PARAM_HEADERS, paramHeadersOf } from '../host/servers/mcp-param-headers.js';

const object = (properties: Record<string, unknown>): Record<string, unknown> => ({ type: 'object', properties });
const headers = (values: Record<string, string>) => (name: string): string | undefined => values[name];

describe('x-mcp-header declarations', () => {
  it('counts primitive properties on a chain of properties, nested ones included', () => {
    const schema = object({ region: { type: 'string', 'x-mcp-header': 'Region' }, meta: object({ tier: { type: 'integer', 'x-mcp-header': 'Tier' } }), plain: { type: 'string' } });
    expect(paramHeadersOf(schema)).toEqual(expect.arrayContaining([
      { header: 'Region', path: ['region'], type: 'string' },
      { header: 'Tier', path: ['meta', 'tier'], type: 'integer' },
    ]));
    expect(paramHeadersOf(schema)).toHaveLength(2);
    expect(paramHeadersOf(object({ a: { type: 'string' } }))).toEqual([]);
    expect(paramHeadersOf(undefined)).toEqual([]);
  });

  it('a declaration the spec does not allow leaves the schema with none checked', () => {
    const wrong = [
      object({ list: { type: 'array', items: { type: 'string', 'x-mcp-header': 'Item' } } }),
      object({ a: { anyOf: [{ type: 'string', 'x-mcp-header': 'A' }] } }),
      object({ o: { type: 'object', 'x-mcp-header': 'O' } }),
      object({ s: { type: 'string', 'x-mcp-header': 'Has Space' } }),
      object({ s: { type: 'string', 'x-mcp-header': '' } }),
      object({ a: { type: 'string', 'x-mcp-header': 'Region' }, b: { type: 'string', 'x-mcp-header': 'region' } }),
      { type: 'string', 'x-mcp-header': 'Root' },
    ];
    for (const schema of wrong) expect(paramHeadersOf(schema)).toEqual([]);
  });

  it('at most MAX_PARAM_HEADERS of them', () => {
    const many = (n: number): Record<string, unknown> => object(Object.fromEntries(Array.from({ length: n }, (_, i) => [`p${i}`, { type: 'string', 'x-mcp-header': `H${i}` }])));
    expect(paramHeadersOf(many(MAX_PARAM_HEADERS))).toHaveLength(MAX_PARAM_HEADERS);
    expect(paramHeadersOf(many(MAX_PARAM_HEADERS + 1))).toEqual([]);
  });

  it('walks a deep schema without recursion, in memory linear in it', () => {
    let deep: Record<string, unknown> = { type: 'string', 'x-mcp-header': 'Deep' };
    for (let i = 0; i < 50_000; i++) deep = object({ p: deep });
    expect(paramHeadersOf(deep)).toHaveLength(1);
  });
});

describe('Mcp-Param-* headers against the body', () => {
  const declarations = paramHeadersOf(object({ region: { type: 'string', 'x-mcp-header': 'Region' }, count: { type: 'number', 'x-mcp-header': 'Count' } }));

  it('agree: literal, Base64 in its sentinel, numbers by value; absent or null body values need no header', () => {
    expect(checkParamHeaders(declarations, { region: 'eu', count: 42 }, headers({ 'mcp-param-region': 'eu', 'mcp-param-count': '42.0' }))).toBeUndefined();
    expect(checkParamHeaders(declarations, { region: 'Zürich' }, headers({ 'mcp-param-region': `=?base64?${Buffer.from('Zürich').toString('base64')}?=` }))).toBeUndefined();
    // Without the whole sentinel the value is literal.
    expect(checkParamHeaders(declarations, { region: '=?base64?SGVsbG8=' }, headers({ 'mcp-param-region': '=?base64?SGVsbG8=' }))).toBeUndefined();
    expect(checkParamHeaders(declarations, { region: null }, headers({}))).toBeUndefined();
    expect(checkParamHeaders(declarations, {}, headers({ 'mcp-param-region': 'ignored' }))).toBeUndefined();
  });

  it('disagree: missing, different, or Base64 that is malformed, not canonical or not UTF-8', () => {
    expect(checkParamHeaders(declarations, { region: 'eu' }, headers({}))?.data).toEqual({ reason: 'param-header-missing', header: 'Mcp-Param-Region' });
    expect(checkParamHeaders(declarations, { region: 'eu' }, headers({ 'mcp-param-region': 'us' }))?.data.reason).toBe('param-header-mismatch');
    expect(checkParamHeaders(declarations, { count: 1 }, headers({ 'mcp-param-count': '' }))?.data.reason).toBe('param-header-mismatch');
    for (const bad of ['=?base64?SGVsbG8?=', '=?base64?SGVs!!!bG8=?=', '=?base64?SGVsbG9=?=', `=?base64?${Buffer.from([0xff, 0xfe]).toString('base64')}?=`]) {
      expect(checkParamHeaders(declarations, { region: 'Hello' }, headers({ 'mcp-param-region': bad }))?.data.reason).toBe('param-header-invalid-encoding');
    }
  });
});
