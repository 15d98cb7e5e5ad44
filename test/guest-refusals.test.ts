/**
 * A host call's refusal, as a JS/TS guest and its caller see it (issue 41, item 2). Through a component built the
 * way `toolhost build` builds a template's tool (fixture kit_refusals, 0.2.0 world, defineMcpComponent): a refused
 * `sample`, `elicit` or `setState` reaches the tool as the host's tool-error `{ code, message, details }` (not an
 * Error with the code in `payload`), and, left uncaught, the caller as the host's code (PERMISSION_DENIED,
 * CLIENT_UNSUPPORTED) with the host's own message, not `TOOL_ERROR: Error: [object Object] (see error.payload)`.
 * A tool cannot claim a host code the host never gave it in the call.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolRegistry } from '../host/index.js';
import { fixture, makeRegistry } from './helpers.js';

const answer = async () => ({ role: 'assistant' as const, content: { type: 'text' as const, text: 'four' }, model: 'test-model' });

describe('a refused host call in a JS guest', () => {
  let bare: ToolRegistry;
  let granted: ToolRegistry;
  beforeAll(async () => {
    bare = makeRegistry();
    await bare.registerWasmTools(fixture('kit_refusals'), { grant: { state: { access: 'read' } } });
    granted = makeRegistry();
    await granted.registerWasmTools(fixture('kit_refusals'), { grant: { sampling: { maxRequests: 2, maxTokens: 100 }, elicitation: { maxRequests: 1 } } });
  }, 120_000);
  afterAll(async () => {
    await bare?.close();
    await granted?.close();
  });

  it('an uncaught refused sample() reaches the caller as PERMISSION_DENIED with the host\'s message', async () => {
    const result = await bare.execute('uncaught_sample', {});
    expect(result.error).toMatchObject({
      code: 'PERMISSION_DENIED',
      message: expect.stringContaining('the tool\'s grant does not allow sampling (grant.sampling)'),
      details: { reason: 'sampling', relayedBy: 'uncaught_sample' },
    });
    expect(result.error!.message).not.toMatch(/object Object|payload/);
  });

  it('an uncaught sample() the caller cannot answer reaches it as CLIENT_UNSUPPORTED', async () => {
    expect((await granted.execute('uncaught_sample', {})).error).toMatchObject({ code: 'CLIENT_UNSUPPORTED', details: { reason: 'sampling' } });
    expect((await granted.execute('uncaught_elicit', {})).error).toMatchObject({ code: 'CLIENT_UNSUPPORTED', details: { reason: 'elicitation' } });
    expect((await bare.execute('uncaught_elicit', {})).error).toMatchObject({ code: 'PERMISSION_DENIED', details: { reason: 'elicitation' } });
  });

  it('an uncaught refused state write reaches the caller as the host\'s PERMISSION_DENIED', async () => {
    expect((await bare.execute('uncaught_state', {}, { conversationId: 'c1' })).error).toMatchObject({
      code: 'PERMISSION_DENIED',
      message: expect.stringContaining('grant.state.access: read'),
    });
  });

  it('the tool sees each refusal as the host\'s tool-error: code, message and details, not an Error', async () => {
    const result = await bare.execute('caught', {}, { conversationId: 'c1' });
    expect(result.structuredContent).toEqual({
      sample: { code: 'PERMISSION_DENIED', message: 'the tool\'s grant does not allow sampling (grant.sampling)', details: { reason: 'sampling' }, isError: false },
      elicit: { code: 'PERMISSION_DENIED', message: 'the tool\'s grant does not allow elicitation (grant.elicitation)', details: { reason: 'elicitation' }, isError: false },
      state: { code: 'PERMISSION_DENIED', message: expect.stringContaining('grant.state.access: read'), details: null, isError: false },
    });
  });

  it('a tool cannot claim a host code the host never gave it: it stays TOOL_ERROR', async () => {
    for (const code of ['PERMISSION_DENIED', 'CLIENT_UNSUPPORTED', 'TOOL_CRASHED', 'OVERLOADED']) {
      expect((await bare.execute('claims', { code })).error, code).toMatchObject({ code: 'TOOL_ERROR', message: 'made up by the tool', details: { code } });
    }
    // Refused one thing, it claims another: still its own error.
    expect((await bare.execute('refused_then_claims', {})).error).toMatchObject({ code: 'TOOL_ERROR', details: { code: 'OUTPUT_LIMIT_EXCEEDED' } });
  });

  it('control: a granted sample() the caller answers returns the answer', async () => {
    const result = await granted.execute('uncaught_sample', {}, { client: { sample: answer } });
    expect(result.error).toBeUndefined();
    expect(result.structuredContent).toEqual({ model: 'test-model', text: 'four' });
  });
});
