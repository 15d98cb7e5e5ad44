/**
 * `toolhost/guest/mcp`: the toolkit for the 0.2.0 tool world (wit/v0.2/tool.wit):
 * tools with MCP content items and an author's title, annotations and icons.
 * Build with `"toolhost": { "world": "0.2.0" }` in package.json (`toolhost init` writes it).
 *
 * ```ts
 * import { sample } from 'toolhost:tool/host@0.2.0';
 * import { content, defineMcpComponent, mcpResult } from 'toolhost/guest/mcp';
 *
 * export const tool = defineMcpComponent('pictures', [{
 *   name: 'red_pixel', description: 'A red pixel.', title: 'Red pixel',
 *   annotations: { readOnlyHint: true, openWorldHint: false }, inputSchema: { type: 'object' },
 *   run: () => mcpResult([content.text('a pixel:'), content.image(PNG_BYTES, 'image/png')]),
 * }]);
 * ```
 */
/// <reference path="./world.d.ts" />
import type { JsonSchema } from './toolkit.js';

/** MCP tool annotations: what the author says. The host lists them unless the tool's grant says otherwise. */
export interface ToolAnnotations {
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
}

/** An icon a client may show: an https: or data: URI. */
export interface ToolIcon {
  src: string;
  mimeType?: string;
  /** "48x48", "any", ... */
  sizes?: string[];
}

/** One content item (the WIT `content` variant), as `content.*` makes it. */
export type ContentItem =
  | { tag: 'text'; val: string }
  | { tag: 'image'; val: { data: Uint8Array; mimeType: string } }
  | { tag: 'audio'; val: { data: Uint8Array; mimeType: string } }
  | { tag: 'resource-link'; val: { uri: string; name: string; title: string | undefined; description: string | undefined; mimeType: string | undefined } }
  | { tag: 'resource'; val: { uri: string; mimeType: string | undefined; body: { tag: 'text'; val: string } | { tag: 'blob'; val: Uint8Array } } };

/** Makers of content items. Bytes are Uint8Arrays. */
export declare const content: {
  text(text: string): ContentItem;
  image(data: Uint8Array, mimeType: string): ContentItem;
  audio(data: Uint8Array, mimeType: string): ContentItem;
  resourceLink(link: { uri: string; name: string; title?: string; description?: string; mimeType?: string }): ContentItem;
  /** An embedded resource: `body` is text (a string) or bytes (a Uint8Array). */
  resource(uri: string, mimeType: string | undefined, body: string | Uint8Array): ContentItem;
};

/** What `mcpResult` makes: content items and, optionally, a JSON value (the structured content). */
export interface McpResult {
  readonly items: ContentItem[];
  readonly value: unknown;
}

/** A result with content items, and optionally a JSON value (its structured content). */
export declare function mcpResult(items: ContentItem[], value?: unknown): McpResult;

/** One tool for `defineMcpComponent`. */
export interface McpToolDefinition {
  name: string;
  description: string;
  inputSchema: JsonSchema;
  outputSchema?: JsonSchema;
  /** Default false. */
  streaming?: boolean;
  /** Default false. */
  idempotent?: boolean;
  /** A human-readable name (MCP `title`). */
  title?: string;
  annotations?: ToolAnnotations;
  icons?: ToolIcon[];
  /**
   * Run one call. `args` is the arguments' JSON text; return a JSON value (the result's value: its
   * structured content and its one text item), JSON text, or `mcpResult(...)`, or a promise of one.
   * Throw `toolError(...)` for a failure of the tool's own; anything else becomes UNCAUGHT_EXCEPTION.
   */
  run(args: string): unknown;
}

/** The 0.2.0 `tool` export (describe and call) of a component carrying `tools`. */
export declare function defineMcpComponent(componentName: string, tools: readonly McpToolDefinition[]): {
  describe(): unknown[];
  call(name: string, args: string): unknown;
};
