/**
 * Issue 36 M2: a 0.2.0 guest's `sample`/`elicit` request far over every limit
 * (test/fixtures/guests/c-v0.2/client_flood.c) never becomes work on the host's
 * main thread. Before, the request was structured-cloned to the main thread and
 * converted there (every message mapped, the schema parsed) before the grant,
 * the client check and `client_request_bytes`: 1M messages stalled the host
 * 10 s, with no sampling grant at all. Now the worker refuses what the grant
 * does not allow before it looks at the request, converts and size-checks the
 * rest under the call's budgets, and posts only bounded text. Beside them the
 * control: an honest request reaches the client's hook and its answer the guest,
 * and refusals made in the worker are still audited and counted.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolRegistry } from '../host/index.js';
import { MemoryAuditLog } from '../host/policy/memory-audit-log.js';
import { fixture, hasCGuests, makeRegistry } from './helpers.js';

type Answer = { error?: { code: string; message: string }; model?: string; action?: string; replies?: string[] };

/** The longest stall of this thread's event loop while `run` runs (ms). */
async function longestStall<T>(run: () => Promise<T>): Promise<{ value: T; stallMs: number }> {
  const histogram = monitorEventLoopDelay({ resolution: 10 });
  histogram.enable();
  try {
    const value = await run();
    return { value, stallMs: histogram.max / 1e6 };
  } finally {
    histogram.disable();
  }
}

const answerModel = async () => ({ role: 'assistant' as const, content: { type: 'text' as const, text: 'four' }, model: 'test-model' });

describe.skipIf(!hasCGuests)('a guest\'s client request far over the limits', () => {
  let bare: ToolRegistry;
  let granted: ToolRegistry;
  const audit = new MemoryAuditLog();
  const limits: string[] = [];
  const asked: unknown[] = [];
  const client = {
    sample: async (request: unknown) => {
      asked.push(request);
      return answerModel();
    },
    elicit: async () => ({ action: 'accept' as const, content: { name: 'Ada' } }),
  };

  beforeAll(async () => {
    bare = makeRegistry({ defaults: { wallMs: 30_000 } });
    await bare.registerWasmTools(fixture('client_flood'));
    granted = makeRegistry({ audit, defaults: { wallMs: 30_000 }, clientRequestBytes: 64 * 1024 });
    granted.onLimitHit((_tool, limit) => limits.push(limit));
    await granted.registerWasmTools(fixture('client_flood'), { grant: { sampling: { maxRequests: 2, maxTokens: 1000 }, elicitation: { maxRequests: 1 } } });
    await granted.registerWasmTools(fixture('mcp_rich'), { grant: { sampling: { maxRequests: 2, maxTokens: 1000 }, elicitation: { maxRequests: 1 } } });
  }, 60_000);
  afterAll(async () => {
    await bare?.close();
    await granted?.close();
  });

  it('refuses 300,000 messages from a guest without a sampling grant, without stalling the main thread', { timeout: 60_000 }, async () => {
    const { value, stallMs } = await longestStall(() => bare.execute('huge_sample', { messages: 300_000 }, { client }));
    expect((value.structuredContent as Answer).error).toMatchObject({ code: 'PERMISSION_DENIED' });
    expect((value.structuredContent as Answer).error!.message).toContain('grant.sampling');
    expect(stallMs).toBeLessThan(1_000);
    expect(asked).toHaveLength(0);
  });

  it('refuses 300,000 messages over client_request_bytes from a granted guest, without stalling the main thread', { timeout: 60_000 }, async () => {
    const { value, stallMs } = await longestStall(() => granted.execute('huge_sample', { messages: 300_000 }, { client }));
    expect((value.structuredContent as Answer).error).toMatchObject({ code: 'OUTPUT_LIMIT_EXCEEDED' });
    expect((value.structuredContent as Answer).error!.message).toContain('client_request_bytes');
    expect(stallMs).toBeLessThan(1_000);
    expect(asked).toHaveLength(0);
    expect(limits).toContain('client_request_bytes');
    // Refused in the worker, audited on the main thread all the same (its size, never its text).
    expect(audit.entries.some((entry) => entry.tool === 'huge_sample' && entry.decision === 'denied' && entry.code === 'OUTPUT_LIMIT_EXCEEDED')).toBe(true);
  });

  it('refuses a 20 MB requested schema, granted or not, without parsing it on the main thread', { timeout: 60_000 }, async () => {
    const denied = await longestStall(() => bare.execute('huge_elicit', { bytes: 20_000_000 }, { client }));
    expect((denied.value.structuredContent as Answer).error).toMatchObject({ code: 'PERMISSION_DENIED' });
    expect(denied.stallMs).toBeLessThan(1_000);
    const over = await longestStall(() => granted.execute('huge_elicit', { bytes: 20_000_000 }, { client }));
    expect((over.value.structuredContent as Answer).error).toMatchObject({ code: 'OUTPUT_LIMIT_EXCEEDED' });
    expect(over.stallMs).toBeLessThan(1_000);
  });

  it('sends an honest sampling request to the caller\'s hook and its answer to the guest (control)', async () => {
    const result = await granted.execute('ask_model', { max_tokens: 64 }, { client });
    expect(result.structuredContent).toEqual({ replies: ['four'], model: 'test-model' });
    expect(asked).toHaveLength(1);
    expect(asked[0]).toMatchObject({ messages: [{ role: 'user', content: { type: 'text', text: 'What is 2+2?' } }], maxTokens: 64, systemPrompt: 'Answer briefly.' });
    // A request of a kind just under the limit still goes: 100 one-byte messages.
    const small = await granted.execute('huge_sample', { messages: 100 }, { client });
    expect(small.structuredContent).toEqual({ model: 'test-model' });
    expect((asked[1] as { messages: unknown[] }).messages).toHaveLength(100);
    const elicited = await granted.execute('ask_user', {}, { client });
    expect(elicited.structuredContent).toEqual({ action: 'accept', content: { name: 'Ada' } });
  });
});
