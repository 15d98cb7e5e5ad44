/**
 * Definitions for model APIs: valid, unique, deterministic names that map
 * back; object schemas; and types that assign to the official SDKs' tool types
 * without a cast (this file does not compile otherwise: `npm run typecheck`).
 */
import type Anthropic from '@anthropic-ai/sdk';
import type OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { defineNativeTool, MODEL_NAME, modelNames, type ToolRegistry } from '../host/index.js';
import { makeRegistry } from './helpers.js';

function tool(registry: ToolRegistry, name: string, inputSchema: Record<string, unknown> | boolean = { type: 'object' }): void {
  registry.register(defineNativeTool({ name, description: `the ${name} tool`, inputSchema, run: () => ({ ran: name }) }));
}

describe('definitions for model APIs', () => {
  it('assign to the OpenAI (Chat Completions, Responses) and Anthropic SDK tool types without a cast', async () => {
    const registry = makeRegistry();
    tool(registry, 'git.status');
    try {
      const chat: OpenAI.Chat.Completions.ChatCompletionTool[] = registry.definitions('openai');
      const responses: OpenAI.Responses.FunctionTool[] = registry.definitions('openai-responses');
      const anthropic: Anthropic.Messages.Tool[] = registry.definitions('anthropic');
      const anthropicUnion: Anthropic.Messages.ToolUnion[] = registry.definitions('anthropic');
      expect([chat.length, responses.length, anthropic.length, anthropicUnion.length]).toEqual([1, 1, 1, 1]);
    } finally {
      await registry.close();
    }
  });

  it('gives valid, unique names that execute accepts and maps back; collisions are resolved deterministically', async () => {
    const registry = makeRegistry();
    const long = `${'a'.repeat(30)}.${'b'.repeat(32)}`; // 63 characters, dotted
    for (const name of ['gh.search', 'gh__search', 'git.status', long]) tool(registry, name);
    try {
      const names = registry.definitions('openai').map((definition) => definition.function.name);
      expect(names.every((name) => MODEL_NAME.test(name))).toBe(true);
      expect(new Set(names).size).toBe(4);
      // A name that already fits keeps itself; the dotted one that would collide with it is hashed.
      expect(names).toContain('gh__search');
      expect(names).toContain('git__status');
      const map = modelNames(registry.names());
      expect(map.get('gh.search')).toMatch(/^gh__search_[0-9a-f]{8}$/);
      expect(map.get(long)!.length).toBeLessThanOrEqual(64);
      // Deterministic: the same set in another order gives the same names.
      expect(modelNames([...registry.names()].reverse())).toEqual(map);
      for (const [registered, model] of map) {
        expect(registry.resolveName(model)).toBe(registered);
        expect((await registry.execute(model, {})).structuredContent).toEqual({ ran: registered });
      }
    } finally {
      await registry.close();
    }
  });

  it('normalizes schemas to type "object" and leaves out tools whose input is not an object', async () => {
    const registry = makeRegistry();
    tool(registry, 'any_true', true);
    tool(registry, 'empty', {});
    tool(registry, 'scalar', { type: 'string' });
    try {
      const anthropic = registry.definitions('anthropic');
      expect(anthropic.map((definition) => [definition.name, definition.input_schema.type])).toEqual([['any_true', 'object'], ['empty', 'object']]);
      expect(registry.definitions('openai-responses').every((definition) => definition.parameters.type === 'object' && definition.strict === false)).toBe(true);
    } finally {
      await registry.close();
    }
  });
});
