/**
 * Conversation state is namespaced per component (issue 36, M11): before, a
 * conversation's state was one namespace for every component, and a tool
 * listed `readOnlyHint: true, destructiveHint: false` with no grant rewrote
 * another component's state. Now each component reads and writes its own
 * namespace (by its registered name), sharing is an explicit grant
 * (`state.share`), `state.access` can make a tool's state read-only or absent,
 * and only such a tool is listed read-only.
 */
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineNativeTool, type ToolGrant, type ToolRegistry } from '../host/index.js';
import { deriveAnnotations } from '../host/policy/annotations.js';
import { fixture, hasCGuests, makeRegistry } from './helpers.js';

describe.runIf(hasCGuests)('conversation state between components', () => {
  // The counter fixture under two component names: `counter` (tools `state`, ...) and `other` (`other.state`, ...).
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'toolhost-state-ns-'));
    copyFileSync(fixture('counter'), join(dir, 'other.wasm'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const registryWith = async (grantX: ToolGrant = {}, grantY: ToolGrant = {}): Promise<ToolRegistry> => {
    const registry = makeRegistry();
    await registry.registerWasmTools(fixture('counter'), { grant: grantX });
    await registry.registerWasmTools(join(dir, 'other.wasm'), { grant: grantY });
    return registry;
  };
  const call = async (registry: ToolRegistry, tool: string, args: Record<string, string>): Promise<unknown> => {
    const result = await registry.execute(tool, args, { conversationId: 'c' });
    return result.isError === true ? result.error : result.structuredContent;
  };

  it('keeps each component\'s keys to itself: Y does not see X\'s key, and Y\'s write leaves X\'s value', async () => {
    const registry = await registryWith();
    try {
      expect(registry.get('other.state')).toBeDefined();
      expect(await call(registry, 'state', { op: 'set', key: 'k', value: '"from X"' })).toEqual({ ok: true });
      expect(await call(registry, 'other.state', { op: 'get', key: 'k' })).toEqual({ value: null });
      expect(await call(registry, 'other.state', { op: 'set', key: 'k', value: '"from Y"' })).toEqual({ ok: true });
      // Control: each component's own round trip.
      expect(await call(registry, 'state', { op: 'get', key: 'k' })).toEqual({ value: '"from X"' });
      expect(await call(registry, 'other.state', { op: 'get', key: 'k' })).toEqual({ value: '"from Y"' });
    } finally {
      await registry.close();
    }
  });

  it('lets components granted the same share group read and write one namespace', async () => {
    const registry = await registryWith({ state: { share: 'team' } }, { state: { share: 'team' } });
    try {
      expect(await call(registry, 'state', { op: 'set', key: 'k', value: '"from X"' })).toEqual({ ok: true });
      expect(await call(registry, 'other.state', { op: 'get', key: 'k' })).toEqual({ value: '"from X"' });
      expect(await call(registry, 'other.state', { op: 'set', key: 'k', value: '"from Y"' })).toEqual({ ok: true });
      expect(await call(registry, 'state', { op: 'get', key: 'k' })).toEqual({ value: '"from Y"' });
      // A native tool granted the group reads it too; one without a grant sees the host's namespace.
      const peek = (name: string, grant?: ToolGrant): void => registry.register(defineNativeTool({
        name, description: 'reads k', inputSchema: { type: 'object' }, ...(grant === undefined ? {} : { grant }),
        run: async (_args, ctx) => ({ value: await ctx.getState<string | null>('k', null) }),
      }));
      peek('peek_team', { state: { share: 'team' } });
      peek('peek_host');
      expect(await call(registry, 'peek_team', {})).toEqual({ value: 'from Y' });
      expect(await call(registry, 'peek_host', {})).toEqual({ value: null });
    } finally {
      await registry.close();
    }
  });

  it('refuses a write of a tool granted read access, finds nothing for one granted none, and lists only those read-only', async () => {
    const registry = await registryWith({ state: { share: 'team', access: 'read' } }, { state: { share: 'team', access: 'none' } });
    try {
      const refused = await call(registry, 'state', { op: 'set', key: 'k', value: '"x"' });
      expect(refused).toMatchObject({ code: 'TOOL_ERROR', details: { code: 'STATE_ERROR' } });
      expect(JSON.stringify(refused)).toContain('PERMISSION_DENIED');
      const writer = makeRegistry();
      try {
        await writer.registerWasmTools(fixture('counter'), { grant: { state: { share: 'team' } } });
        expect(deriveAnnotations(writer.get('state')!)).toMatchObject({ readOnlyHint: false, destructiveHint: true });
      } finally {
        await writer.close();
      }
      expect(deriveAnnotations(registry.get('state')!)).toMatchObject({ readOnlyHint: true, destructiveHint: false });
      expect(deriveAnnotations(registry.get('other.state')!)).toMatchObject({ readOnlyHint: true, destructiveHint: false });
      expect(await call(registry, 'other.state', { op: 'get', key: 'k' })).toEqual({ value: null });
    } finally {
      await registry.close();
    }
  });
});

describe('annotations of a tool that may write conversation state', () => {
  it('are never read-only: only a grant with state access read or none lists a confined tool read-only', () => {
    const tool = (grant: ToolGrant) => ({ executionMode: 'sandboxed' as const, idempotent: false, grant, annotations: { readOnlyHint: true, destructiveHint: false } });
    expect(deriveAnnotations(tool({}))).toMatchObject({ readOnlyHint: false, destructiveHint: true });
    expect(deriveAnnotations(tool({ state: { access: 'write' } }))).toMatchObject({ readOnlyHint: false });
    expect(deriveAnnotations(tool({ state: { access: 'read' } }))).toMatchObject({ readOnlyHint: true, destructiveHint: false });
    expect(deriveAnnotations(tool({ state: { access: 'none' } }))).toMatchObject({ readOnlyHint: true, destructiveHint: false });
  });
});
