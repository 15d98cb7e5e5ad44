/**
 * Admission plans the whole call (issue 24, item 2): it returns a closed
 * CallPlan (principal, tenant, scoped conversation key, budgets,
 * capabilities), and nothing below admission reads the caller's CallOptions,
 * checked here on the sources' syntax trees, and by calls whose options
 * change after they started.
 */
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { defineNativeTool, type ToolContext } from '../host/index.js';
import { admit, type AdmissionDeps, type CallPlan } from '../host/core/call/admission.js';
import { ANONYMOUS_TENANT, conversationScope } from '../host/core/principal-scope.js';
import { DEFAULT_POLICY_DEFAULTS } from '../host/policy/execution-policy.js';
import { makeRegistry } from './helpers.js';
import { hostDir, hostSourceFiles, identifierName, parseSource, walk } from './host-sources.js';

/** Where CallOptions may be named: its definition, admission, the registry that takes it, and the entry points and adapters above. */
const MAY_NAME_CALL_OPTIONS = [/^core\/call\/options\.ts$/, /^core\/call\/admission\.ts$/, /^core\/registry\.ts$/, /^core\/surfaces\.ts$/, /^index\.ts$/, /^runner\.ts$/, /^servers\//, /^compose\//, /^cli\//, /^bench\//];

function namesCallOptions(file: string): boolean {
  let found = false;
  walk(parseSource(file).program, (node) => {
    if (identifierName(node) === 'CallOptions') found = true;
    return !found;
  });
  return found;
}

/** Compile-time: the plan carries no CallOptions (nor anything of that name) for a layer below to read. */
const PLAN_HAS_NO_OPTIONS: 'options' extends keyof CallPlan ? never : true = true;

describe('the call plan', () => {
  it('is the only description of a call below admission: no file there names CallOptions', () => {
    const below = hostSourceFiles()
      .map((file) => relative(hostDir, file))
      .filter((file) => !MAY_NAME_CALL_OPTIONS.some((allowed) => allowed.test(file)));
    expect(PLAN_HAS_NO_OPTIONS).toBe(true);
    expect(below.length).toBeGreaterThan(100);
    expect(below.filter((file) => namesCallOptions(join(hostDir, file)))).toEqual([]);
  });

  it('works out the tenant and the conversation key once, from the principal', () => {
    const tool = defineNativeTool({ name: 'noop', description: 'Nothing.', inputSchema: { type: 'object' }, run: () => ({}) });
    const deps: AdmissionDeps = {
      lookup: () => ({ tool, validate: { check: () => undefined } as never }),
      suggest: () => [],
      defaults: DEFAULT_POLICY_DEFAULTS,
      hostEnv: {},
      maxCallIdLength: 128,
    };
    const alice = admit(deps, 'c1', 'noop', {}, { principal: 'alice', conversationId: 'conv', agentName: 'a-fresh-name' });
    const nobody = admit(deps, 'c2', 'noop', {}, { conversationId: 'conv', sessionId: 's' });
    if (!alice.admitted || !nobody.admitted) throw new Error('refused');
    expect(alice.call).toMatchObject({ principal: 'alice', tenant: 'alice', conversationId: 'conv', conversationKey: conversationScope('alice', 'conv'), agentName: 'a-fresh-name' });
    expect(nobody.call).toMatchObject({ tenant: ANONYMOUS_TENANT, conversationId: 'conv', conversationKey: 'conv', sessionId: 's' });
    expect(nobody.call.principal).toBeUndefined();
    expect(alice.call).not.toHaveProperty('options');
  });

  it('refuses a policy over a host ceiling once, audited, with the call id', () => {
    const tool = defineNativeTool({ name: 'noop', description: 'Nothing.', inputSchema: { type: 'object' }, run: () => ({}) });
    const deps: AdmissionDeps = { lookup: () => ({ tool, validate: { check: () => undefined } as never }), suggest: () => [], defaults: DEFAULT_POLICY_DEFAULTS, hostEnv: {}, maxCallIdLength: 128 };
    const refused = admit(deps, 'c3', 'noop', {}, { policy: { budget_wall_ms: DEFAULT_POLICY_DEFAULTS.maxWallMs + 1 } });
    if (refused.admitted) throw new Error('admitted');
    expect(refused.error.code).toBe('PERMISSION_DENIED');
    expect(refused.error.callId).toBe('c3');
    expect(refused.audit).toMatchObject({ callId: 'c3', decision: 'denied', code: 'PERMISSION_DENIED' });
  });

  it('is closed: options changed after the call started change nothing it sees', async () => {
    const registry = makeRegistry();
    let seen: Pick<ToolContext, 'conversationId' | 'conversationKey' | 'principal'> | undefined;
    registry.register(defineNativeTool({
      name: 'peek',
      description: 'Reports its context after a turn.',
      inputSchema: { type: 'object' },
      run: async (_args, ctx) => {
        await new Promise((resolve) => setTimeout(resolve, 10));
        seen = { conversationId: ctx.conversationId, conversationKey: ctx.conversationKey, principal: ctx.principal };
        return {};
      },
    }));
    try {
      const options = { principal: 'alice', conversationId: 'mine' };
      const running = registry.execute('peek', {}, options);
      options.principal = 'mallory';
      options.conversationId = 'theirs';
      await running;
      expect(seen).toEqual({ conversationId: 'mine', conversationKey: conversationScope('alice', 'mine'), principal: 'alice' });
    } finally {
      await registry.close();
    }
  });
});
