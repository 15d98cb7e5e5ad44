/** A guest's content item (0.2.0 world, bytes as bytes) in MCP's JSON shape (bytes as base64). */
import type { ContentBlock } from '../../core/result.js';
import type { GuestContent } from '../protocol.js';

/** A guest's content item as an MCP content block (bytes as base64): tool results and prompt messages alike. */
export function contentBlock(item: GuestContent): ContentBlock {
  switch (item.type) {
    case 'image':
    case 'audio':
      return { type: item.type, data: Buffer.from(item.data).toString('base64'), mimeType: item.mimeType };
    case 'resource': {
      const { resource } = item;
      if ('text' in resource) return { type: 'resource', resource };
      const { blob, ...rest } = resource;
      return { type: 'resource', resource: { ...rest, blob: Buffer.from(blob).toString('base64') } };
    }
    default:
      return item;
  }
}
