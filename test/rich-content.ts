/**
 * What the `rich` tool of the mcp_rich and sdk_rich fixtures answers (the same items from the raw WIT world and
 * from the C SDK): one content item of every kind beside the value `{ ok: true }`.
 */
export const RICH_CONTENT = [
  { type: 'text', text: 'hello' },
  { type: 'image', data: Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).toString('base64'), mimeType: 'image/png' },
  { type: 'audio', data: Buffer.from('RIFF\0\0\0\0', 'latin1').toString('base64'), mimeType: 'audio/wav' },
  { type: 'resource_link', uri: 'test://doc', name: 'doc', title: 'A document', mimeType: 'text/plain' },
  { type: 'resource', resource: { uri: 'test://embedded', mimeType: 'text/plain', text: 'embedded text' } },
  { type: 'resource', resource: { uri: 'test://blob', mimeType: 'application/octet-stream', blob: 'AQID' } },
];
