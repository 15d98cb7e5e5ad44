/**
 * A real `toolhost serve` process for the fleet tests (MCP over Streamable
 * HTTP and gRPC on ephemeral loopback ports), with gRPC and MCP clients, and
 * stopped by its pid (SIGKILL).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { cliEnv, cliPath } from '../cli-runner.js';
import { root } from '../helpers.js';
import { until } from '../redis-server.js';

export interface ToolFrame { call_id: string; final: boolean; data: Buffer; summary: Buffer }
export interface ToolError { call_id: string; error_code: string; message: string }
export interface ToolServiceClient extends grpc.Client {
  Call(request: object, metadata: grpc.Metadata, options: grpc.CallOptions, callback: (error: grpc.ServiceError | null, value?: ToolFrame) => void): void;
  CallStream(request: object): grpc.ClientReadableStream<ToolFrame>;
  Cancel(request: object, callback: (error: grpc.ServiceError | null, value?: ToolError) => void): void;
}
const definition = loadSync(join(root, 'proto', 'sw4rm', 'tool.proto'), { keepCase: true, longs: Number, defaults: true });
const ToolService = (grpc.loadPackageDefinition(definition) as unknown as { sw4rm: { tool: { ToolService: grpc.ServiceClientConstructor } } }).sw4rm.tool.ToolService;

/** A unary call's final frame, read back: `ok` with the result, or the error's code and message. */
export interface CallOutcome { ok: boolean; data?: unknown; code?: string; message?: string }

export class ServeProcess {
  readonly child: ChildProcess;
  output = '';
  mcpUrl = '';
  grpcAddress = '';
  #grpc: ToolServiceClient | undefined;
  #mcp: Client | undefined;

  constructor(args: string[]) {
    this.child = spawn(process.execPath, [cliPath, 'serve', ...args, '--mcp', 'http', '--port', '0', '--grpc-port', '0'], {
      cwd: root, env: cliEnv(), stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child.stdout?.on('data', (chunk: Buffer) => (this.output += chunk.toString()));
    this.child.stderr?.on('data', (chunk: Buffer) => (this.output += chunk.toString()));
  }

  async started(): Promise<void> {
    await until(() => /gRPC \(sw4rm\.tool\.ToolService\): \S+/.test(this.output) || this.child.exitCode !== null, 90_000, 'toolhost serve to start');
    if (this.child.exitCode !== null) throw new Error(`toolhost serve exited: ${this.output}`);
    this.mcpUrl = /http:\/\/127\.0\.0\.1:\d+\/mcp/.exec(this.output)![0];
    this.grpcAddress = /gRPC \(sw4rm\.tool\.ToolService\): (\S+)/.exec(this.output)![1]!;
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  grpc(): ToolServiceClient {
    this.#grpc ??= new ToolService(this.grpcAddress, grpc.credentials.createInsecure()) as unknown as ToolServiceClient;
    return this.#grpc;
  }

  async mcp(): Promise<Client> {
    if (!this.#mcp) {
      this.#mcp = new Client({ name: 'fleet-test', version: '1.0.0' });
      await this.#mcp.connect(new StreamableHTTPClientTransport(new URL(this.mcpUrl)));
    }
    return this.#mcp;
  }

  /** A unary gRPC call of `tool` (in `conversation`, when given), with a client deadline of `deadlineMs`. */
  call(tool: string, args: unknown, options: { conversation?: string; callId?: string; deadlineMs?: number } = {}): Promise<CallOutcome> {
    const metadata = new grpc.Metadata();
    if (options.conversation !== undefined) metadata.set('toolhost-conversation-id', options.conversation);
    return new Promise((resolve, reject) => {
      this.grpc().Call({ tool_name: tool, args: Buffer.from(JSON.stringify(args)), ...(options.callId === undefined ? {} : { call_id: options.callId }) }, metadata, { deadline: Date.now() + (options.deadlineMs ?? 30_000) }, (error, frame) => {
        if (error) return reject(error);
        const summary = JSON.parse(frame!.summary.toString()) as { status?: string; error?: { code: string; message: string } };
        if (summary.status === 'ok') return resolve({ ok: true, data: JSON.parse(frame!.data.toString()) as unknown });
        resolve({ ok: false, code: summary.error?.code ?? 'UNKNOWN', message: summary.error?.message ?? '' });
      });
    });
  }

  /** A gRPC CallStream of the counter's `spin` (loops until cancelled); resolves with its last frame's summary. */
  spin(callId: string): Promise<Record<string, unknown>> {
    return new Promise((resolve, reject) => {
      const call = this.grpc().CallStream({ call_id: callId, tool_name: 'spin', args: Buffer.from('{}'), stream: true });
      let last: ToolFrame | undefined;
      call.on('data', (frame: ToolFrame) => (last = frame));
      call.on('error', reject);
      call.on('end', () => resolve(last?.final ? (JSON.parse(last.summary.toString()) as Record<string, unknown>) : {}));
    });
  }

  cancel(callId: string): Promise<ToolError> {
    return new Promise((resolve, reject) => this.grpc().Cancel({ call_id: callId }, (error, answer) => (error ? reject(error) : resolve(answer!))));
  }

  async stop(): Promise<void> {
    this.#grpc?.close();
    await this.#mcp?.close().catch(() => undefined);
    if (!this.alive) return;
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.kill('SIGKILL');
    await exited;
  }
}
