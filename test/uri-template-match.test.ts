/**
 * The host's URI-template matcher (host/core/uri-template-match.ts): the same
 * answers as the MCP SDK's `UriTemplate.match` on ordinary and random small
 * inputs, without its backtracking RegExp: a template of adjacent expressions
 * against a URI that does not match costs a table walk, not seconds.
 */
import { describe, expect, it } from 'vitest';
import { UriTemplate } from '@modelcontextprotocol/sdk/shared/uriTemplate.js';
import { compileUriTemplate, isRefusal, matchCost, matchUriTemplate, URI_TEMPLATE_LIMITS, type CompiledUriTemplate } from '../host/core/uri-template-match.js';

function compiled(template: string): CompiledUriTemplate {
  const result = compileUriTemplate(template);
  if (isRefusal(result)) throw new Error(result.message);
  return result;
}

function sdkMatch(template: string, uri: string): Record<string, string | string[]> | null {
  try {
    return new UriTemplate(template).match(uri);
  } catch {
    return null;
  }
}

describe('URI template matching', () => {
  it('matches ordinary URIs and extracts their variables as the SDK does', () => {
    const cases: Array<[string, string]> = [
      ['test://items/{id}', 'test://items/42'],
      ['file:///{+path}', 'file:///a/b/c.txt'],
      ['repo://{owner}/{repo}/issues/{n}', 'repo://acme/tool/issues/7'],
      ['api://search{?q,limit}', 'api://search?q=wasm&limit=10'],
      ['api://x{?q}{&page}', 'api://x?q=a&page=2'],
      ['host://{name}{.ext}', 'host://readme.md'],
      ['list://{ids*}', 'list://1,2,3'],
      ['path://root{/segments*}', 'path://root/a,b'],
      ['doc://{+base}#{frag}', 'doc://x/y#top'],
    ];
    for (const [template, uri] of cases) {
      const ours = matchUriTemplate(compiled(template), uri);
      expect(ours, `${template} ~ ${uri}`).not.toBeNull();
      expect(ours).toEqual(sdkMatch(template, uri));
    }
    expect(matchUriTemplate(compiled('test://items/{id}'), 'test://items/4/2')).toBeNull();
    expect(matchUriTemplate(compiled('test://items/{id}'), 'test://other/42')).toBeNull();
    expect(matchUriTemplate(compiled('api://search{?q,limit}'), 'api://search?q=wasm')).toBeNull();
  });

  it('gives the SDK\'s answer on thousands of random small templates and URIs, values included', () => {
    // A seeded generator: the same cases every run.
    let seed = 12345;
    const next = (n: number): number => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    const pieces = ['{a}', '{+b}', '{#c}', '{.d}', '{/e}', '{f*}', '{/g*}', '{?h,i}', '{&j}', 'x', '/', ',', '.', '-', '?', '&', '=', 'h=', 'i='];
    const alphabet = ['x', 'y', '/', ',', '.', '-', '?', '&', '=', 'h', 'i', '#', '\n'];
    let compared = 0;
    let matched = 0;
    for (let t = 0; t < 400; t++) {
      const template = Array.from({ length: 1 + next(4) }, () => pieces[next(pieces.length)]!).join('');
      const matcher = compiled(template);
      for (let u = 0; u < 12; u++) {
        const uri = Array.from({ length: next(9) }, () => alphabet[next(alphabet.length)]!).join('');
        const expected = sdkMatch(template, uri);
        expect(matchUriTemplate(matcher, uri), `${JSON.stringify(template)} ~ ${JSON.stringify(uri)}`).toEqual(expected);
        compared++;
        if (expected) matched++;
      }
    }
    expect(compared).toBe(4800);
    expect(matched).toBeGreaterThan(100);
  });

  it('answers a backtracking template against a URI that does not match in a table walk, not seconds', () => {
    // The SDK's RegExp for this pair takes seconds at 40 characters (x2 per character or so); here the
    // cost is (parts + 1) x (URI + 1) cells.
    const hostile = compiled(`${'{+v}'.repeat(URI_TEMPLATE_LIMITS.expressions - 1)}!`.replace(/\{\+v\}/g, (_, offset: number) => `{+v${offset}}`));
    const uri = 'x'.repeat(URI_TEMPLATE_LIMITS.uriLength);
    const started = performance.now();
    expect(matchUriTemplate(hostile, uri)).toBeNull();
    expect(matchUriTemplate(hostile, `${uri.slice(1)}!`)).not.toBeNull();
    expect(performance.now() - started).toBeLessThan(1000);
    expect(matchCost(hostile, uri.length)).toBe((hostile.parts.length + 1) * (uri.length + 1));
  });

  it('refuses templates past its caps, and ones the SDK cannot match, with a reason', () => {
    expect(compileUriTemplate('x'.repeat(URI_TEMPLATE_LIMITS.templateLength + 1))).toMatchObject({ reason: 'too-long' });
    expect(compileUriTemplate('{a}'.repeat(URI_TEMPLATE_LIMITS.expressions + 1))).toMatchObject({ reason: 'too-many-expressions' });
    expect(compileUriTemplate(`q://x{?${Array.from({ length: URI_TEMPLATE_LIMITS.variables + 1 }, (_, i) => `v${i}`).join(',')}}`)).toMatchObject({ reason: 'too-many-variables' });
    expect(compileUriTemplate('q://{open')).toMatchObject({ reason: 'unclosed-expression' });
    expect(compileUriTemplate('q://{}')).toMatchObject({ reason: 'no-variable' });
    expect(compileUriTemplate(42)).toMatchObject({ reason: 'not-a-string' });
    expect(matchUriTemplate(compiled('{+a}'), 'x'.repeat(URI_TEMPLATE_LIMITS.uriLength + 1))).toBeNull();
  });
});
