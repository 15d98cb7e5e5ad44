/**
 * The export queue is bounded (`telemetry.max_queue_spans`): spans past it are dropped, never held, and each
 * drop is a `max_queue_spans` limit hit (counted by `toolhost_limit_hits_total`). A collector that does not
 * answer costs the host at most that many spans.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { defineNativeTool } from '../host/index.js';
import { createTracer } from '../host/telemetry/sdk.js';
import { telemetrySettings } from '../host/telemetry/settings.js';
import { makeRegistry } from './helpers.js';

describe('the span export queue', () => {
  const closers: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const close of closers) await close();
  });

  it('drops spans past max_queue_spans and reports each as a limit hit (hostile: a flood of calls)', async () => {
    // A collector address nothing listens on, and a queue of 4: the batch processor exports every 5 s.
    const tracer = await createTracer(telemetrySettings({ endpoint: 'http://127.0.0.1:9', maxQueueSpans: 4 }, {})!, 'test');
    const registry = makeRegistry({ tracer });
    closers.push(async () => {
      await registry.close();
      await tracer.shutdown().catch(() => undefined);
    });
    registry.register(defineNativeTool({ name: 'noop', description: 'nothing', inputSchema: { type: 'object' }, run: () => null }));
    const hits: string[] = [];
    registry.onLimitHit((tool, limit) => hits.push(`${tool} ${limit}`));
    for (let i = 0; i < 20; i++) expect((await registry.execute('noop', {})).isError).toBeFalsy();
    // Each call makes two spans (execute_tool, admission): 40 spans, 4 kept.
    expect(hits.length).toBeGreaterThanOrEqual(30);
    expect(new Set(hits)).toEqual(new Set(['(tracing) max_queue_spans']));
  });

  it('drops nothing while the queue has room (control)', async () => {
    const tracer = await createTracer(telemetrySettings({ endpoint: 'http://127.0.0.1:9' }, {})!, 'test');
    const registry = makeRegistry({ tracer });
    closers.push(async () => {
      await registry.close();
      await tracer.shutdown().catch(() => undefined);
    });
    registry.register(defineNativeTool({ name: 'noop', description: 'nothing', inputSchema: { type: 'object' }, run: () => null }));
    const hits: string[] = [];
    registry.onLimitHit((tool, limit) => hits.push(`${tool} ${limit}`));
    for (let i = 0; i < 20; i++) await registry.execute('noop', {});
    expect(hits).toEqual([]);
  });
});
