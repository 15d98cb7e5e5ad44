/**
 * The example tools are 0.2.0 components (text, json, net through the JS toolkit's defineMcpComponent, ctools
 * through the C SDK): each tool carries its author's title and annotations, and the JS and C ones an icon. Their
 * results are those of 0.1.0 (the examples' own tests), and the annotations clients see are derived from the
 * grant (test/mcp-annotations.test.ts); here, what the authors declare.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolRegistry } from '../host/index.js';
import { example, hasCGuests, makeRegistry } from './helpers.js';

const CLOSED = { readOnlyHint: true, destructiveHint: false, openWorldHint: false };

describe('the example tools\' titles, annotations and icons', () => {
  let registry: ToolRegistry;
  beforeAll(async () => {
    registry = makeRegistry();
    await registry.registerWasmTools(['text', 'json', 'net', ...(hasCGuests ? ['ctools'] : [])].map(example));
  });
  afterAll(() => registry?.close());

  const declared = (name: string) => {
    const { title, annotations, icons } = registry.get(name)!;
    return { title, annotations, icons: icons?.map((icon) => icon.mimeType) };
  };

  it('text: titles, closed-world hints (word_count not idempotent: it keeps a running total), an icon', () => {
    expect(declared('word_count')).toEqual({ title: 'Word count', annotations: { ...CLOSED, idempotentHint: false }, icons: ['image/svg+xml'] });
    expect(declared('regex_search')).toEqual({ title: 'Regex search', annotations: { ...CLOSED, idempotentHint: true }, icons: ['image/svg+xml'] });
    expect(declared('js_echo')).toMatchObject({ title: 'Echo (JS)', annotations: { ...CLOSED, idempotentHint: true } });
  });

  it('net: http_get says it reaches the open world', () => {
    expect(declared('http_get')).toMatchObject({ title: 'HTTP GET', annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: true } });
  });

  it('json keeps its metadata', () => {
    expect(declared('json_query')).toMatchObject({ title: 'JSON query', icons: ['image/svg+xml'] });
  });

  it.skipIf(!hasCGuests)('ctools (the C SDK): titles, pure-function hints, an icon', () => {
    expect(declared('sha256')).toEqual({ title: 'SHA-256', annotations: { ...CLOSED, idempotentHint: true }, icons: ['image/svg+xml'] });
    expect(declared('echo')).toEqual({ title: 'Echo', annotations: { ...CLOSED, idempotentHint: true }, icons: ['image/svg+xml'] });
  });
});
