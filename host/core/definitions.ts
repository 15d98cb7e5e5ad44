/** Tool definitions in the shapes agents and model APIs expect. */
import type { JsonSchema, ToolDescriptor } from './tool.js';

export type DefinitionFormat = 'toolhost' | 'mcp' | 'openai' | 'anthropic';

export interface ToolhostDefinition {
  name: string;
  description: string;
  inputSchema: JsonSchema;
  outputSchema?: JsonSchema;
  executionMode: ToolDescriptor['executionMode'];
  idempotent: boolean;
  streaming: boolean;
  source?: string;
}

export interface McpDefinition {
  name: string;
  description: string;
  inputSchema: JsonSchema;
  outputSchema?: JsonSchema;
  annotations: { readOnlyHint?: boolean; idempotentHint: boolean; openWorldHint?: boolean };
}

export interface OpenAIDefinition {
  type: 'function';
  function: { name: string; description: string; parameters: JsonSchema };
}

export interface AnthropicDefinition {
  name: string;
  description: string;
  input_schema: JsonSchema;
}

export interface DefinitionsByFormat {
  toolhost: ToolhostDefinition;
  mcp: McpDefinition;
  openai: OpenAIDefinition;
  anthropic: AnthropicDefinition;
}

/**
 * OpenAI and Anthropic function names allow only [a-zA-Z0-9_-]; a namespaced
 * name's dots become `__` there (and back when the call comes in).
 */
export function modelSafeName(name: string): string {
  return name.replaceAll('.', '__');
}

export function toDefinition<F extends DefinitionFormat>(tool: ToolDescriptor, format: F): DefinitionsByFormat[F] {
  const byFormat: { [K in DefinitionFormat]: () => DefinitionsByFormat[K] } = {
    toolhost: () => ({
      name: tool.name,
      description: tool.description,
      inputSchema: tool.inputSchema,
      ...(tool.outputSchema === undefined ? {} : { outputSchema: tool.outputSchema }),
      executionMode: tool.executionMode,
      idempotent: tool.idempotent,
      streaming: tool.streaming,
      ...(tool.source === undefined ? {} : { source: tool.source }),
    }),
    mcp: () => ({
      name: tool.name,
      description: tool.description,
      inputSchema: tool.inputSchema,
      ...(tool.outputSchema === undefined ? {} : { outputSchema: tool.outputSchema }),
      annotations: {
        ...(tool.readOnly === undefined ? {} : { readOnlyHint: tool.readOnly }),
        idempotentHint: tool.idempotent,
      },
    }),
    openai: () => ({
      type: 'function',
      function: { name: modelSafeName(tool.name), description: tool.description, parameters: tool.inputSchema },
    }),
    anthropic: () => ({ name: modelSafeName(tool.name), description: tool.description, input_schema: tool.inputSchema }),
  };
  return byFormat[format]();
}
