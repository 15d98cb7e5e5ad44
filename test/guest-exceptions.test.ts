/**
 * A JS guest's exception reaches the caller with its message: `toolhost build`
 * (and the example/fixture builds) wrap the component's `call` so anything
 * thrown that is not a tool-error becomes the tool-error UNCAUGHT_EXCEPTION.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { collect, fixture, makeRegistry } from './helpers.js';

const registry = makeRegistry();
await registry.registerWasmTools(fixture('thrower'));
afterAll(() => registry.close());

describe('a JS guest that throws', () => {
  it('ends a call that throws TypeError("boom") with TOOL_ERROR carrying "boom" and the JS stack', async () => {
    const events = await collect(registry.stream('type_error', {}));
    const terminal = events.at(-1);
    expect(terminal).toMatchObject({ type: 'error', code: 'TOOL_ERROR', message: 'TypeError: boom' });
    const details = (terminal as { details?: { code?: string; details?: { name?: string; stack?: string; tool?: string } } }).details;
    expect(details?.code).toBe('UNCAUGHT_EXCEPTION');
    expect(details?.details).toMatchObject({ name: 'TypeError', tool: 'type_error' });
    expect(details?.details?.stack).toMatch(/guest\.js/);
  });

  it('ends a call whose promise rejects with that rejection\'s message', async () => {
    const result = await registry.execute('async_rejection', {});
    expect(result.isError).toBe(true);
    expect(result.error).toMatchObject({ code: 'TOOL_ERROR', message: 'later', details: { code: 'UNCAUGHT_EXCEPTION' } });
  });

  it('passes a tool-error of its own through unchanged', async () => {
    const result = await registry.execute('own_error', {});
    expect(result.error).toMatchObject({ code: 'TOOL_ERROR', message: 'not today', details: { code: 'NOPE', details: { why: 'fixture' } } });
  });

  it('keeps the instance usable: the next call runs normally', async () => {
    await registry.execute('type_error', {});
    const result = await registry.execute('own_error', {});
    expect(result.error?.code).toBe('TOOL_ERROR');
  });
});
