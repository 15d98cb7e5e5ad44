/**
 * What `toolhost call` prints on stdout for a result (without `--events`): one JSON value. The tool's structured
 * output when its content says nothing more (a JSON tool's one text block is that output's text: printed as before);
 * otherwise MCP's CallToolResult shape, `{"content": [...], "structuredContent": ...}`, so content items (images,
 * resource links, a 0.2.0 tool's text) are shown rather than dropped for a `null`.
 */
import type { ContentBlock, ToolResult } from '../core/result.js';

/** Whether `block` is only the text of `data` (how a JSON-returning tool's result is rendered for clients). */
function isTextOf(block: ContentBlock, data: unknown): boolean {
  if (block.type !== 'text' || data === null || data === undefined) return false;
  try {
    return JSON.stringify(JSON.parse(block.text)) === JSON.stringify(data);
  } catch {
    return false;
  }
}

/** The value `call` prints for a result with `data` (its structured content, or null) and `result`. */
export function callOutput(data: unknown, result: ToolResult): unknown {
  const content = result.content.filter((block) => !isTextOf(block, data));
  if (content.length === 0) return data;
  return { content: result.content, ...(data === null || data === undefined ? {} : { structuredContent: data }) };
}
