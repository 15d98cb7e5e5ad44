// The JS toolkit for the 0.2.0 tool world (wit/v0.2/tool.wit): tools with MCP content items and
// metadata (title, annotations, icons). Build the component against world `tool-provider` (tools
// only) or `mcp-provider` (with `prompts` and `resources` exports of its own) of wit/v0.2/tool.wit.
//
//   import { defineMcpComponent, content, mcpResult } from '../js-sdk/mcp.js';
//
//   export const tool = defineMcpComponent('pictures', [{
//     name: 'red_pixel', description: 'A red pixel.', title: 'Red pixel',
//     annotations: { readOnlyHint: true }, inputSchema: { type: 'object' },
//     run: () => mcpResult([content.text('a pixel:'), content.image(PNG_BYTES, 'image/png')]),
//   }]);
//
// `run` gets the arguments' JSON text and returns a JSON value (the result's value: its structured
// content, and its one text item) or `mcpResult(items, value?)`. Failures as with `defineComponent`:
// throw `toolError(...)`; anything else becomes UNCAUGHT_EXCEPTION. The host, not the author, decides
// the annotations clients see (derived from the grant; the author's cautious hints are kept).
import { runTool, toolError } from './toolkit.js';

const RESULT = Symbol.for('toolhost.mcpResult');

/** Content items (the WIT `content` variant). Bytes are Uint8Arrays. */
export const content = {
  text: (text) => ({ tag: 'text', val: text }),
  image: (data, mimeType) => ({ tag: 'image', val: { data, mimeType } }),
  audio: (data, mimeType) => ({ tag: 'audio', val: { data, mimeType } }),
  resourceLink: ({ uri, name, title, description, mimeType }) => ({ tag: 'resource-link', val: { uri, name, title, description, mimeType } }),
  /** An embedded resource: `body` is text (a string) or bytes (a Uint8Array). */
  resource: (uri, mimeType, body) => ({ tag: 'resource', val: { uri, mimeType, body: typeof body === 'string' ? { tag: 'text', val: body } : { tag: 'blob', val: body } } }),
};

/** A result with content items, and optionally a JSON value (its structured content). */
export function mcpResult(items, value) {
  return { [RESULT]: true, items, value };
}

const NO_HINTS = { readOnlyHint: undefined, destructiveHint: undefined, idempotentHint: undefined, openWorldHint: undefined };

/** The 0.2.0 `tool` export of a component carrying `tools`. */
export function defineMcpComponent(componentName, tools) {
  return {
    describe() {
      return tools.map((t) => ({
        name: t.name,
        description: t.description,
        inputSchema: JSON.stringify(t.inputSchema),
        outputSchema: t.outputSchema === undefined ? undefined : JSON.stringify(t.outputSchema),
        streaming: t.streaming ?? false,
        idempotent: t.idempotent ?? false,
        title: t.title,
        annotations: { ...NO_HINTS, ...t.annotations },
        icons: (t.icons ?? []).map((icon) => ({ src: icon.src, mimeType: icon.mimeType, sizes: icon.sizes ?? [] })),
      }));
    },

    call(name, args) {
      const t = tools.find((x) => x.name === name);
      if (t === undefined) {
        throw toolError('UNKNOWN_TOOL', `no tool named "${name}" in component ${componentName}`, { tools: tools.map((x) => x.name) });
      }
      const output = (result) => {
        if (result !== null && typeof result === 'object' && result[RESULT] === true) {
          return { value: result.value === undefined ? undefined : JSON.stringify(result.value), content: result.items };
        }
        return { value: typeof result === 'string' ? result : JSON.stringify(result), content: [] };
      };
      return runTool(name, t, args, output);
    },
  };
}
