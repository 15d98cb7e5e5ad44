/**
 * The example component guest-tools/c/media (toolhost.example.yaml): its tool `swatch_tone` answers with an
 * `image` (image/png) and an `audio` (audio/wav) content item, generated in the guest from the arguments. An MCP
 * client receives both with their mimeType and base64 data, over Streamable HTTP on both protocol eras (the SDK
 * 1.x client on 2025-11-25, the SDK v2 client pinned to 2026-07-28), and the bytes are a valid PNG of the asked
 * colour and size and a valid WAV of the asked tone.
 */
import { existsSync } from 'node:fs';
import { inflateSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import type { ToolRegistry } from '../host/index.js';
import { startMcpHttpServer, type McpHttpServer } from '../host/servers/mcp-http.js';
import { example, makeRegistry } from './helpers.js';

type Item = { type: string; text?: string; data?: string; mimeType?: string };

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
const crc32 = (bytes: Buffer): number => {
  let c = 0xffffffff;
  for (const byte of bytes) c = CRC_TABLE[(c ^ byte) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
};

/** The PNG's size and its pixels' distinct colours (every chunk's CRC checked, the zlib stream inflated). */
function readPng(bytes: Buffer): { width: number; height: number; colours: Set<string> } {
  expect([...bytes.subarray(0, 8)]).toEqual([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  let at = 8;
  let width = 0;
  let height = 0;
  const idat: Buffer[] = [];
  const types: string[] = [];
  while (at < bytes.length) {
    const length = bytes.readUInt32BE(at);
    const type = bytes.toString('latin1', at + 4, at + 8);
    const data = bytes.subarray(at + 8, at + 8 + length);
    expect(bytes.readUInt32BE(at + 8 + length), `CRC of ${type}`).toBe(crc32(bytes.subarray(at + 4, at + 8 + length)));
    types.push(type);
    if (type === 'IHDR') {
      width = data.readUInt32BE(0);
      height = data.readUInt32BE(4);
      expect([...data.subarray(8)]).toEqual([8, 2, 0, 0, 0]); // 8-bit RGB, deflate, no interlace
    }
    if (type === 'IDAT') idat.push(data);
    at += 12 + length;
  }
  expect(types).toEqual(['IHDR', 'IDAT', 'IEND']);
  const raw = inflateSync(Buffer.concat(idat)); // checks the zlib header and the Adler-32
  expect(raw.length).toBe(height * (1 + 3 * width));
  const colours = new Set<string>();
  for (let y = 0; y < height; y++) {
    const row = y * (1 + 3 * width);
    expect(raw[row]).toBe(0);
    for (let x = 0; x < width; x++) colours.add(raw.subarray(row + 1 + 3 * x, row + 4 + 3 * x).toString('hex'));
  }
  return { width, height, colours };
}

/** The WAV's format and samples (16-bit mono PCM). */
function readWav(bytes: Buffer): { rate: number; samples: Int16Array } {
  expect(bytes.toString('latin1', 0, 4)).toBe('RIFF');
  expect(bytes.readUInt32LE(4)).toBe(bytes.length - 8);
  expect(bytes.toString('latin1', 8, 16)).toBe('WAVEfmt ');
  expect([bytes.readUInt16LE(20), bytes.readUInt16LE(22), bytes.readUInt16LE(34)]).toEqual([1, 1, 16]); // PCM, mono, 16-bit
  expect(bytes.toString('latin1', 36, 40)).toBe('data');
  const length = bytes.readUInt32LE(40);
  expect(length).toBe(bytes.length - 44);
  const samples = new Int16Array(length / 2);
  for (let i = 0; i < samples.length; i++) samples[i] = bytes.readInt16LE(44 + 2 * i);
  return { rate: bytes.readUInt32LE(24), samples };
}

/** The media items of a result, decoded and checked against what was asked. */
function checkMedia(content: Item[], asked: { colour: string; size: number; hz: number; ms: number }): void {
  expect(content.map((item) => item.type)).toEqual(['text', 'image', 'audio']);
  expect(content[0]!.text).toBe(`A ${asked.size}x${asked.size} swatch of #${asked.colour} and a ${asked.hz} Hz tone of ${asked.ms} ms.`);
  const [, image, audio] = content;
  expect(image!.mimeType).toBe('image/png');
  expect(audio!.mimeType).toBe('audio/wav');
  for (const item of [image!, audio!]) expect(item.data).toMatch(/^[A-Za-z0-9+/]+={0,2}$/);
  const png = readPng(Buffer.from(image!.data!, 'base64'));
  expect(png).toEqual({ width: asked.size, height: asked.size, colours: new Set([asked.colour]) });
  const wav = readWav(Buffer.from(audio!.data!, 'base64'));
  expect(wav.rate).toBe(8000);
  expect(wav.samples.length).toBe((8000 * asked.ms) / 1000);
  // A tone, not silence: zero crossings at twice its frequency (give or take the fades).
  let crossings = 0;
  for (let i = 1; i < wav.samples.length; i++) if ((wav.samples[i - 1]! < 0) !== (wav.samples[i]! < 0)) crossings += 1;
  expect(Math.abs(crossings - (2 * asked.hz * asked.ms) / 1000)).toBeLessThanOrEqual(3);
  expect(Math.max(...wav.samples)).toBeGreaterThan(5000);
}

const built = existsSync(example('media'));

describe.skipIf(!built)('the media example tool answers image and audio content items on both protocol eras', () => {
  let registry: ToolRegistry;
  let server: McpHttpServer;
  const closers: Array<() => Promise<void>> = [];

  beforeAll(async () => {
    registry = makeRegistry({ sandbox: { threads: 1 } });
    // As toolhost.example.yaml grants it: no state, so the tool is listed read-only.
    await registry.registerWasmTools(example('media'), { grant: { state: { access: 'none' } } });
    server = await startMcpHttpServer(registry, { host: '127.0.0.1', port: 0 });
  });
  afterAll(async () => {
    for (const close of closers) await close().catch(() => {});
    await server?.close();
    await registry?.close();
  });

  it('an SDK 1.x client on 2025-11-25 receives a PNG of the asked colour and size and a WAV of the asked tone', async () => {
    const client = new LegacyClient({ name: 'media-2025', version: '1.0.0' });
    await client.connect(new LegacyTransport(new URL(server.url)));
    closers.push(() => client.close());
    const result = await client.callTool({ name: 'swatch_tone', arguments: { color: '#FF8000', size: 5, hz: 500, ms: 100 } });
    expect(result.isError).toBeFalsy();
    checkMedia(result.content as Item[], { colour: 'ff8000', size: 5, hz: 500, ms: 100 });
  });

  it('an SDK v2 client pinned to 2026-07-28 receives the same items, with the defaults when it gives no arguments', async () => {
    const client = new Client({ name: 'media-2026', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url)));
    closers.push(() => client.close());
    expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
    const tool = (await client.listTools()).tools.find((entry) => entry.name === 'swatch_tone');
    expect(tool?.annotations).toMatchObject({ readOnlyHint: true, openWorldHint: false });
    const result = await client.callTool({ name: 'swatch_tone', arguments: {} });
    expect(result.isError).toBeFalsy();
    checkMedia(result.content as Item[], { colour: '3366cc', size: 16, hz: 440, ms: 250 });
  });

  it('refuses arguments out of range with a tool error, on the 2026 leg as on the 2025 one', async () => {
    const client = new Client({ name: 'media-2026-bad', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url)));
    closers.push(() => client.close());
    const result = await client.callTool({ name: 'swatch_tone', arguments: { size: 65 } });
    expect(result.isError).toBe(true);
    expect(JSON.stringify(result.content)).toContain('INVALID_INPUT');
  });
});
