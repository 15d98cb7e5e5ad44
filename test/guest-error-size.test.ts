/**
 * A guest's own error (TOOL_ERROR) is guest output that crosses to the main thread like a result: its message and
 * details count against the result limit (`max_result_bytes`). Before, only a result's value and content items
 * did, and a guest could end every call with an error message as large as its memory (issue 36, found beside M6).
 * The control: an ordinary error passes through with its code and message.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolRegistry } from '../host/index.js';
import { fixture, hasCGuests, makeRegistry } from './helpers.js';

describe.skipIf(!hasCGuests)('a guest\'s own error', () => {
  let registry: ToolRegistry;

  beforeAll(async () => {
    registry = makeRegistry({ sandbox: { outputLimits: { maxResultBytes: 64 * 1024 } } });
    await registry.registerWasmTools(fixture('client_flood'));
  }, 60_000);
  afterAll(async () => {
    await registry?.close();
  });

  it('ends the call OUTPUT_LIMIT_EXCEEDED when its message is over the result limit, quoting a short prefix', async () => {
    const result = await registry.execute('big_error', { bytes: 4 * 1024 * 1024 });
    expect(result.error).toMatchObject({ code: 'OUTPUT_LIMIT_EXCEEDED', details: { reason: 'result', limit: 64 * 1024 } });
    expect(result.error!.message).toContain('BIG');
    expect(result.error!.message.length).toBeLessThan(400);
  });

  it('passes an ordinary error through with its code and message (control)', async () => {
    const result = await registry.execute('big_error', { bytes: 100 });
    expect(result.error).toMatchObject({ code: 'TOOL_ERROR', message: 'e'.repeat(100), details: { code: 'BIG' } });
  });
});
