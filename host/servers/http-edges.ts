/**
 * The HTTP edges of the MCP Streamable HTTP server: which Host and Origin
 * headers are accepted (DNS-rebinding and cross-site defences), and reading
 * and writing JSON bodies (bearer tokens: principals.ts).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

/** The Host headers accepted by default: the loopback names, and the bound host, at the bound port. */
export function defaultAllowedHosts(host: string, port: number): string[] {
  const names = new Set(['127.0.0.1', 'localhost', '[::1]']);
  if (host !== '0.0.0.0' && host !== '::') names.add(hostForUrl(host).toLowerCase());
  return [...names].map((name) => `${name}:${port}`);
}

/** The Origin headers accepted by default: the loopback names over http at the bound port. */
export function defaultAllowedOrigins(port: number): string[] {
  return ['localhost', '127.0.0.1', '[::1]'].map((name) => `http://${name}:${port}`);
}

/** A matcher for Origin headers: absent passes (not a browser); otherwise an exact, case-insensitive match (`*` allows any). */
export function originMatcher(allowed: readonly string[]): (header: string | undefined) => boolean {
  const set = new Set(allowed.map((entry) => entry.trim().toLowerCase().replace(/\/+$/, '')));
  return (header) => header === undefined || set.has('*') || set.has(header.trim().toLowerCase());
}

/** A matcher for Host headers: `name:port` entries match exactly, bare names match any port. */
export function hostMatcher(allowed: readonly string[]): (header: string | undefined) => boolean {
  const exact = new Set<string>();
  const names = new Set<string>();
  for (const entry of allowed) {
    const lower = entry.trim().toLowerCase();
    if (splitHost(lower).port === undefined) names.add(lower);
    else exact.add(lower);
  }
  return (header) => {
    if (header === undefined || header === '') return false;
    const lower = header.trim().toLowerCase();
    if (exact.has(lower)) return true;
    return names.has(splitHost(lower).name);
  };
}

export function splitHost(value: string): { name: string; port: string | undefined } {
  if (value.startsWith('[')) {
    const end = value.indexOf(']');
    if (end < 0) return { name: value, port: undefined };
    const rest = value.slice(end + 1);
    return { name: value.slice(0, end + 1), port: rest.startsWith(':') ? rest.slice(1) : undefined };
  }
  const colon = value.lastIndexOf(':');
  if (colon < 0 || value.indexOf(':') !== colon) return { name: value, port: undefined };
  return { name: value.slice(0, colon), port: value.slice(colon + 1) };
}

export function hostForUrl(host: string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}

export function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

export function pathOf(url: string | undefined): string {
  const raw = url ?? '/';
  const query = raw.indexOf('?');
  return query < 0 ? raw : raw.slice(0, query);
}

export type ReadResult = { ok: true; value: unknown } | { ok: false; status: 400 | 413; message: string };

/** Read a JSON body of at most `limit` bytes (a larger body is drained and refused). */
export function readJson(req: IncomingMessage, limit: number): Promise<ReadResult> {
  return new Promise((resolve, reject) => {
    const declared = Number(header(req, 'content-length'));
    const tooLarge: ReadResult = { ok: false, status: 413, message: `request body larger than ${limit} bytes` };
    if (Number.isFinite(declared) && declared > limit) {
      req.resume();
      resolve(tooLarge);
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) chunks.push(chunk);
    });
    req.once('error', reject);
    req.once('end', () => {
      if (size > limit) return resolve(tooLarge);
      try {
        resolve({ ok: true, value: JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown });
      } catch (error) {
        resolve({ ok: false, status: 400, message: `Parse error: ${(error as Error).message}` });
      }
    });
  });
}

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

export function rpcError(res: ServerResponse, status: number, code: number, message: string, data?: Record<string, unknown>, id: string | number | null = null): void {
  sendJson(res, status, { jsonrpc: '2.0', error: { code, message, ...(data === undefined ? {} : { data }) }, id });
}

export function methodNotAllowed(res: ServerResponse, allow: string): void {
  res.setHeader('Allow', allow);
  sendJson(res, 405, { error: 'method not allowed' });
}
