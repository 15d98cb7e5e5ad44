/**
 * An OTLP/HTTP trace receiver for tests, on 127.0.0.1 (an ephemeral port): it takes `POST /v1/traces` in
 * either encoding an exporter sends (`application/json`, `application/x-protobuf`), decodes the body (JSON
 * as is; protobuf with @grpc/proto-loader over test/fixtures/otlp/trace.proto, a subset of OTLP's own
 * messages), and keeps every span flat: ids in hex, attributes as plain values, the resource's service name.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { loadSync } from '@grpc/proto-loader';
import { root } from './helpers.js';

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client. */
  kind: number;
  attributes: Record<string, unknown>;
  /** 0 unset, 1 ok, 2 error. */
  statusCode: number;
  service: string;
  /** The encoding it arrived in. */
  encoding: 'json' | 'protobuf';
}

const definition = loadSync(join(root, 'test', 'fixtures', 'otlp', 'trace.proto'), { keepCase: true, longs: String, bytes: Buffer, defaults: false, oneofs: true });
const decodeProtobuf = (definition['otlptest.TraceService'] as unknown as { Export: { requestDeserialize(body: Buffer): unknown } }).Export.requestDeserialize;

type Json = Record<string, unknown>;

export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  /** Every body as received (raw bytes), to search for text that must not leave the host. */
  readonly bodies: Buffer[] = [];
  #server: Server | undefined;
  url = '';

  async start(): Promise<void> {
    this.#server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const body = Buffer.concat(chunks);
        this.bodies.push(body);
        try {
          const json = /json/.test(req.headers['content-type'] ?? '');
          this.#take(json ? JSON.parse(body.toString('utf8')) as Json : decodeProtobuf(body) as Json, json ? 'json' : 'protobuf');
          res.writeHead(200, { 'content-type': json ? 'application/json' : 'application/x-protobuf' });
          res.end(json ? '{}' : undefined);
        } catch (error) {
          res.writeHead(400);
          res.end(String(error));
        }
      });
    });
    await new Promise<void>((resolve) => this.#server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => {
      if (this.#server === undefined) return resolve();
      this.#server.close(() => resolve());
      this.#server.closeAllConnections();
    });
  }

  /** Wait until `predicate` holds for the spans received (or fail after `ms`). */
  async waitFor(predicate: (spans: ReceivedSpan[]) => boolean, ms = 20_000): Promise<ReceivedSpan[]> {
    const deadline = Date.now() + ms;
    while (!predicate(this.spans)) {
      if (Date.now() > deadline) throw new Error(`spans not received in ${ms} ms; got: ${this.spans.map((span) => span.name).join(', ')}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return this.spans;
  }

  #take(request: Json, encoding: ReceivedSpan['encoding']): void {
    for (const resourceSpans of list(request.resource_spans ?? request.resourceSpans)) {
      const resource = (resourceSpans.resource ?? {}) as Json;
      const service = String(attributesOf(resource.attributes)['service.name'] ?? '');
      for (const scope of list(resourceSpans.scope_spans ?? resourceSpans.scopeSpans)) {
        for (const span of list(scope.spans)) {
          const status = (span.status ?? {}) as Json;
          this.spans.push({
            traceId: hex(span.trace_id ?? span.traceId),
            spanId: hex(span.span_id ?? span.spanId),
            parentSpanId: hex(span.parent_span_id ?? span.parentSpanId),
            name: String(span.name),
            kind: Number(span.kind ?? 0),
            attributes: attributesOf(span.attributes),
            statusCode: Number(status.code ?? 0),
            service,
            encoding,
          });
        }
      }
    }
  }
}

function list(value: unknown): Json[] {
  return Array.isArray(value) ? (value as Json[]) : [];
}

/** A protobuf id (bytes) or a JSON one (hex text) as hex; empty for none. */
function hex(value: unknown): string {
  if (value === undefined || value === null) return '';
  if (Buffer.isBuffer(value)) return value.toString('hex');
  return String(value).toLowerCase();
}

function attributesOf(value: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const entry of list(value)) out[String(entry.key)] = anyValue(entry.value as Json | undefined);
  return out;
}

function anyValue(value: Json | undefined): unknown {
  if (value === undefined || value === null) return undefined;
  const pick = (snake: string, camel: string): unknown => value[snake] ?? value[camel];
  const text = pick('string_value', 'stringValue');
  if (text !== undefined) return text;
  const flag = pick('bool_value', 'boolValue');
  if (flag !== undefined) return flag;
  const int = pick('int_value', 'intValue');
  if (int !== undefined) return Number(int);
  const double = pick('double_value', 'doubleValue');
  if (double !== undefined) return Number(double);
  return undefined;
}
