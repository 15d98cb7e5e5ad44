/**
 * Outgoing HTTP from real guests (componentize-js fetch() over wasi:http),
 * under each network label, against local servers on 127.0.0.1.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolRegistry } from '../host/index.js';
import { CONTAINMENTS, example, fixture, makeRegistry } from './helpers.js';

interface LocalServer {
  server: Server;
  port: number;
  hits: string[];
}

async function listen(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<LocalServer> {
  const hits: string[] = [];
  const server = createServer((req, res) => {
    hits.push(`${req.method} ${req.url} host=${req.headers.host}`);
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port, hits };
}

describe.each(CONTAINMENTS)('outgoing HTTP under the network policy (%s containment)', (containment) => {
  let allowed: LocalServer;
  let other: LocalServer;
  let registry: ToolRegistry;

  beforeAll(async () => {
    allowed = await listen((req, res) => {
      if (req.url === '/redirect-out') {
        res.writeHead(302, { location: `http://127.0.0.1:${other.port}/landed` }).end();
      } else if (req.url === '/redirect-in') {
        res.writeHead(302, { location: `http://127.0.0.1:${allowed.port}/hello` }).end();
      } else {
        res.writeHead(200, { 'content-type': 'text/plain', 'x-served-by': 'allowed' }).end(`hello from ${req.url}`);
      }
    });
    other = await listen((_req, res) => res.writeHead(200).end('you should not see this'));
    registry = makeRegistry({ approve: () => true, sandbox: { containment } });
    const grant = { network: 'FULL_ACCESS' as const, egressAllow: [`127.0.0.1:${allowed.port}`] };
    await registry.registerWasmTools([example('net'), fixture('fetcher')], { grant });
  });
  afterAll(async () => {
    await registry.close();
    allowed.server.close();
    other.server.close();
  });

  const get = (url: string, network_policy?: string) =>
    registry.execute('http_get', { url }, network_policy === undefined ? {} : { policy: { network_policy } });

  it('refuses everything under DENY_ALL (the default): the tool fails with NETWORK_DENIED', async () => {
    const before = allowed.hits.length;
    const result = await get(`http://127.0.0.1:${allowed.port}/x`);
    expect(result.error).toMatchObject({ code: 'NETWORK_DENIED' });
    expect(result.accounting?.networkDenied).toEqual([expect.objectContaining({ url: `http://127.0.0.1:${allowed.port}/x` })]);
    expect(allowed.hits.length).toBe(before);
  });

  it('lets EGRESS_RESTRICTED reach allowlisted destinations only', async () => {
    const ok = await get(`http://127.0.0.1:${allowed.port}/hello`, 'EGRESS_RESTRICTED');
    expect(ok.structuredContent).toMatchObject({ status: 200, body: 'hello from /hello', headers: { 'x-served-by': 'allowed' } });
    const before = other.hits.length;
    const denied = await get(`http://127.0.0.1:${other.port}/`, 'egress_restricted');
    expect(denied.error).toMatchObject({ code: 'NETWORK_DENIED' });
    expect(other.hits.length).toBe(before);
  });

  it('keeps EGRESS_UNRESTRICTED off loopback, names that resolve to it, and the metadata address', async () => {
    for (const url of [`http://127.0.0.1:${other.port}/`, `http://localhost:${other.port}/`, 'http://169.254.169.254/latest/meta-data/', 'http://[::1]:9/']) {
      const result = await get(url, 'EGRESS_UNRESTRICTED');
      expect(result.error, url).toMatchObject({ code: 'NETWORK_DENIED' });
    }
    // The allowlist makes an exception for the allowlisted address.
    const excepted = await get(`http://127.0.0.1:${allowed.port}/hello`, 'EGRESS_UNRESTRICTED');
    expect(excepted.structuredContent).toMatchObject({ status: 200 });
  });

  it('lets FULL_ACCESS (approved) reach anything', async () => {
    const result = await get(`http://127.0.0.1:${other.port}/`, 'FULL_ACCESS');
    expect(result.structuredContent).toMatchObject({ status: 200, body: 'you should not see this' });
  });

  it('hands redirects to the guest; a guest that follows one is checked again at every hop', async () => {
    const manual = await get(`http://127.0.0.1:${allowed.port}/redirect-out`, 'EGRESS_RESTRICTED');
    expect(manual.structuredContent).toMatchObject({ status: 302 });
    const before = other.hits.length;
    const followed = await registry.execute('get', { url: `http://127.0.0.1:${allowed.port}/redirect-out` }, { policy: { network_policy: 'EGRESS_RESTRICTED' } });
    expect(followed.isError).toBe(true);
    expect(followed.error?.code).toBe('NETWORK_DENIED');
    expect(other.hits.length).toBe(before);
    const inside = await registry.execute('get', { url: `http://127.0.0.1:${allowed.port}/redirect-in` }, { policy: { network_policy: 'EGRESS_RESTRICTED' } });
    expect(inside.structuredContent).toMatchObject({ status: 200, body: 'hello from /hello' });
  });

  it('refuses a network label above the grant', async () => {
    const narrow = makeRegistry();
    try {
      await narrow.registerWasmTools(example('net'), { grant: { network: 'EGRESS_RESTRICTED' } });
      await expect(narrow.execute('http_get', { url: 'http://127.0.0.1:9/' }, { policy: { network_policy: 'EGRESS_UNRESTRICTED' } })).rejects.toMatchObject({ code: 'PERMISSION_DENIED' });
    } finally {
      await narrow.close();
    }
  });
});
