/**
 * A local OTLP/HTTP sink for `toolhost bench --trace` (`TOOLHOST_BENCH_TRACE=1`): a loopback HTTP server that
 * reads each export's body whole, counts it and answers 200, so a traced benchmark pays for building, batching,
 * encoding and posting every span (100 % sampled) without a collector on the machine.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface TraceSink {
  /** The OTLP base URL (traces go to `${url}/v1/traces`). */
  readonly url: string;
  /** Export requests and body bytes received. */
  readonly received: { requests: number; bytes: number };
  close(): Promise<void>;
}

export async function startTraceSink(): Promise<TraceSink> {
  const received = { requests: 0, bytes: 0 };
  const server = createServer((req, res) => {
    req.on('data', (chunk: Buffer) => (received.bytes += chunk.length));
    req.on('end', () => {
      received.requests += 1;
      res.writeHead(200, { 'content-type': req.headers['content-type'] ?? 'application/x-protobuf' });
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
  };
}
