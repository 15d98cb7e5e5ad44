/**
 * A component's prompts and resources (the optional `prompts` and `resources`
 * interfaces of `toolhost:tool@0.2.0` and `@0.3.0`), run in the worker like a call: the
 * host sends a call of the reserved tool name `SURFACE_GUEST_NAME` whose
 * arguments name the operation, and gets back the answer as JSON text in MCP's
 * shapes (media and blobs base64). The call path's budgets, limits
 * (`maxResultBytes` included) and error handling apply unchanged: a guest's
 * `tool-error` is thrown by jco's glue, as from `call`.
 *
 * Guarantees: only the two interfaces' functions are reached; the name can
 * never be a tool's (tool names have no `:`). Does not check what the guest
 * says (URIs, MIME types, how many items): the host side does (core/surfaces.ts).
 */
import type { GuestContent } from '../protocol.js';
import { contentBlock } from './content-block.js';

/** The tool name the host calls to reach a component's prompts and resources. */
export const SURFACE_GUEST_NAME = 'toolhost:surface';

/** The optional interfaces, as jco names them, by world (the same shapes in 0.2.0 and 0.3.0), newest first. */
export const SURFACE_EXPORTS = [
  { prompts: 'toolhost:tool/prompts@0.3.0', resources: 'toolhost:tool/resources@0.3.0' },
  { prompts: 'toolhost:tool/prompts@0.2.0', resources: 'toolhost:tool/resources@0.2.0' },
] as const;

/** What a component offers besides tools, from the export names jco lists. */
export function surfaceOfExports(exports: readonly string[]): { prompts: boolean; resources: boolean } {
  return {
    prompts: SURFACE_EXPORTS.some((names) => exports.includes(names.prompts)),
    resources: SURFACE_EXPORTS.some((names) => exports.includes(names.resources)),
  };
}

/** One operation on a component's prompts or resources (the reserved call's arguments). */
export type SurfaceOperation =
  | { op: 'prompts/list' }
  | { op: 'prompts/get'; name: string; arguments: Record<string, string> }
  | { op: 'prompts/complete'; prompt: string; argument: string; value: string }
  | { op: 'resources/list' }
  | { op: 'resources/templates' }
  | { op: 'resources/read'; uri: string }
  | { op: 'resources/complete'; template: string; variable: string; value: string };

interface PromptsInterface {
  listPrompts(): Array<{ name: string; title?: string; description?: string; arguments: Array<{ name: string; description?: string; required: boolean }> }>;
  getPrompt(name: string, args: Array<[string, string]>): { description?: string; messages: Array<{ role: string; content: unknown }> };
  completeArgument(prompt: string, argument: string, value: string): string[];
}

interface ResourcesInterface {
  listResources(): Array<{ uri: string; name: string; title?: string; description?: string; mimeType?: string }>;
  listTemplates(): Array<{ uriTemplate: string; name: string; title?: string; description?: string; mimeType?: string }>;
  readResource(uri: string): Array<{ uri: string; mimeType?: string; body: { tag: 'text'; val: string } | { tag: 'blob'; val: Uint8Array } }>;
  completeTemplate(template: string, variable: string, value: string): string[];
}

/** The prompts and resources interfaces of one instance (either may be absent). */
export class SurfaceExports {
  readonly #prompts: PromptsInterface | undefined;
  readonly #resources: ResourcesInterface | undefined;

  constructor(exports: Record<string, unknown>) {
    this.#prompts = SURFACE_EXPORTS.map((names) => exports[names.prompts]).find((found) => found !== undefined) as PromptsInterface | undefined;
    this.#resources = SURFACE_EXPORTS.map((names) => exports[names.resources]).find((found) => found !== undefined) as ResourcesInterface | undefined;
  }

  /** Run the operation `args` (JSON text) names; the answer as JSON text. Throws what the guest or the glue threw. */
  run(args: string, contentOf: (raw: never) => GuestContent): string {
    const operation = JSON.parse(args) as SurfaceOperation;
    return JSON.stringify(this.#run(operation, contentOf));
  }

  #run(operation: SurfaceOperation, contentOf: (raw: never) => GuestContent): unknown {
    switch (operation.op) {
      case 'prompts/list':
        return this.#promptsOrThrow().listPrompts().map((prompt) => defined({ ...prompt, arguments: prompt.arguments.map((argument) => defined({ ...argument })) }));
      case 'prompts/get': {
        const result = this.#promptsOrThrow().getPrompt(operation.name, Object.entries(operation.arguments));
        return defined({ description: result.description, messages: result.messages.map((message) => ({ role: message.role, content: contentBlock(contentOf(message.content as never)) })) });
      }
      case 'prompts/complete':
        return [...this.#promptsOrThrow().completeArgument(operation.prompt, operation.argument, operation.value)];
      case 'resources/list':
        return this.#resourcesOrThrow().listResources().map((resource) => defined({ ...resource }));
      case 'resources/templates':
        return this.#resourcesOrThrow().listTemplates().map((template) => defined({ ...template }));
      case 'resources/read':
        return this.#resourcesOrThrow().readResource(operation.uri).map(({ uri, mimeType, body }) => defined({
          uri,
          mimeType,
          ...(body.tag === 'text' ? { text: body.val } : { blob: Buffer.from(body.val).toString('base64') }),
        }));
      case 'resources/complete':
        return [...this.#resourcesOrThrow().completeTemplate(operation.template, operation.variable, operation.value)];
      default:
        throw new Error(`unknown surface operation ${JSON.stringify((operation as { op?: unknown }).op)}`);
    }
  }

  #promptsOrThrow(): PromptsInterface {
    if (!this.#prompts) throw new Error(`the component does not export ${SURFACE_EXPORTS.map((names) => names.prompts).join(' or ')}`);
    return this.#prompts;
  }

  #resourcesOrThrow(): ResourcesInterface {
    if (!this.#resources) throw new Error(`the component does not export ${SURFACE_EXPORTS.map((names) => names.resources).join(' or ')}`);
    return this.#resources;
  }
}

/** The object without its undefined fields (JSON drops them anyway; this keeps the shape explicit). */
function defined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, field]) => field !== undefined)) as T;
}
