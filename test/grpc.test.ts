/**
 * The gRPC ToolService, end to end: a real grpc-js client built from the repo's
 * proto (proto/sw4rm/tool.proto, loaded here on its own, as a sw4rm client
 * would) against `startGrpcServer` on 127.0.0.1.
 */
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import * as grpc from '@grpc/grpc-js';
import { loadSync, type PackageDefinition, type ServiceDefinition } from '@grpc/proto-loader';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineNativeTool, richResult, toolError, ToolhostError, type TerminalEvent, type ToolRegistry } from '../host/index.js';
import { startGrpcServer, type GrpcServerHandle } from '../host/servers/grpc/server.js';
import { grpcStatusOf } from '../host/servers/grpc/status.js';
import { toPolicyInput } from '../host/servers/grpc/policy.js';
import { parseArgs } from '../host/servers/grpc/call-request.js';
import { example, fixture, hasCGuests, makeRegistry, root } from './helpers.js';

// ---------------------------------------------------------------- the client

const PROTO = join(root, 'proto', 'sw4rm', 'tool.proto');

interface Duration {
  seconds?: number;
  nanos?: number;
}
interface Policy {
  timeout?: Duration;
  max_retries?: number;
  backoff?: string;
  worktree_required?: boolean;
  network_policy?: string;
  privilege_level?: string;
  budget_cpu_ms?: number;
  budget_wall_ms?: number;
}
interface ToolCall {
  call_id?: string;
  tool_name?: string;
  provider_id?: string;
  content_type?: string;
  args?: Buffer;
  policy?: Policy;
  stream?: boolean;
}
interface ToolFrame {
  call_id: string;
  frame_no: number;
  final: boolean;
  content_type: string;
  data: Buffer;
  summary: Buffer;
}
interface ToolError {
  call_id: string;
  error_code: string;
  message: string;
}
type UnaryCallback<T> = (error: grpc.ServiceError | null, value?: T) => void;
interface ToolServiceClient extends grpc.Client {
  Call(request: ToolCall, metadata: grpc.Metadata, options: grpc.CallOptions, callback: UnaryCallback<ToolFrame>): grpc.ClientUnaryCall;
  CallStream(request: ToolCall, metadata: grpc.Metadata, options: grpc.CallOptions): grpc.ClientReadableStream<ToolFrame>;
  Cancel(request: ToolCall, callback: UnaryCallback<ToolError>): grpc.ClientUnaryCall;
}

// A client as another language's would load it: numbers for 64-bit fields, its own loader options.
const clientPackage: PackageDefinition = loadSync(PROTO, { keepCase: true, longs: Number, defaults: true });
const ToolService = (grpc.loadPackageDefinition(clientPackage) as unknown as { sw4rm: { tool: { ToolService: grpc.ServiceClientConstructor } } }).sw4rm.tool.ToolService;

function connect(address: string): ToolServiceClient {
  return new ToolService(address, grpc.credentials.createInsecure()) as unknown as ToolServiceClient;
}

const jsonArgs = (value: unknown): Buffer => Buffer.from(JSON.stringify(value), 'utf8');
const parse = (buffer: Buffer): Record<string, unknown> => JSON.parse(buffer.toString('utf8')) as Record<string, unknown>;

interface CallOpts {
  deadlineMs?: number;
  metadata?: grpc.Metadata;
}

function unary(client: ToolServiceClient, request: ToolCall, opts: CallOpts = {}): Promise<ToolFrame> {
  return new Promise((resolve, reject) => {
    const options: grpc.CallOptions = opts.deadlineMs === undefined ? {} : { deadline: Date.now() + opts.deadlineMs };
    client.Call(request, opts.metadata ?? new grpc.Metadata(), options, (error, frame) => {
      if (error) reject(error);
      else resolve(frame!);
    });
  });
}

interface StreamOutcome {
  frames: ToolFrame[];
  error?: grpc.ServiceError;
  status?: grpc.StatusObject;
}

/** Run CallStream; `onFrame` may act on each frame as it arrives (e.g. cancel). */
function streamCall(client: ToolServiceClient, request: ToolCall, opts: CallOpts & { onFrame?: (frame: ToolFrame, call: grpc.ClientReadableStream<ToolFrame>) => void } = {}): Promise<StreamOutcome> {
  return new Promise((resolve) => {
    const options: grpc.CallOptions = opts.deadlineMs === undefined ? {} : { deadline: Date.now() + opts.deadlineMs };
    const call = client.CallStream(request, opts.metadata ?? new grpc.Metadata(), options);
    const outcome: StreamOutcome = { frames: [] };
    let ended = false;
    let statusSeen = false;
    const done = (): void => {
      if (ended && statusSeen) resolve(outcome);
    };
    call.on('data', (frame: ToolFrame) => {
      outcome.frames.push(frame);
      opts.onFrame?.(frame, call);
    });
    call.on('error', (error: grpc.ServiceError) => {
      outcome.error = error;
      ended = true;
      done();
    });
    call.on('end', () => {
      ended = true;
      done();
    });
    call.on('status', (status: grpc.StatusObject) => {
      outcome.status = status;
      statusSeen = true;
      done();
    });
  });
}

function cancel(client: ToolServiceClient, callId: string): Promise<ToolError> {
  return new Promise((resolve, reject) => {
    client.Cancel({ call_id: callId }, (error, answer) => {
      if (error) reject(error);
      else resolve(answer!);
    });
  });
}

async function rejection(promise: Promise<unknown>): Promise<grpc.ServiceError> {
  try {
    await promise;
  } catch (error) {
    return error as grpc.ServiceError;
  }
  throw new Error('expected the call to be refused');
}

const metadataCode = (error: grpc.ServiceError | undefined): unknown => error?.metadata?.get('toolhost-error-code')[0];

// ---------------------------------------------------------------- the tools

/** Callers wait for a slow call to be running: keyed by call id. */
const running = new Map<string, () => void>();
function whenRunning(callId: string): Promise<void> {
  return new Promise((resolve) => running.set(callId, resolve));
}

function nativeTools(registry: ToolRegistry): void {
  registry.register(defineNativeTool({
    name: 'echo',
    description: 'Echoes its text.',
    inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'], additionalProperties: false },
    run: (args) => ({ text: (args as { text: string }).text }),
  }));
  registry.register(defineNativeTool({
    name: 'chunks',
    description: 'Streams progress and deltas with small sleeps.',
    inputSchema: { type: 'object', properties: { n: { type: 'integer', minimum: 1 } }, required: ['n'] },
    streaming: true,
    async run(args, _ctx, events) {
      const { n } = args as { n: number };
      for (let i = 0; i < n; i += 1) {
        events.progress(Math.round((i / n) * 100), `chunk ${i}`);
        events.delta({ i });
        await sleep(5);
      }
      events.log('info', 'all chunks sent');
      return { chunks: n };
    },
  }));
  registry.register(defineNativeTool({
    name: 'slow',
    description: 'Sends a delta, then waits until its call is cancelled.',
    inputSchema: { type: 'object' },
    streaming: true,
    async run(_args, ctx, events) {
      events.delta({ started: true });
      running.get(ctx.callId)?.();
      await new Promise<void>((resolve) => {
        if (ctx.signal.aborted) resolve();
        ctx.signal.addEventListener('abort', () => resolve(), { once: true });
      });
      throw ctx.signal.reason;
    },
  }));
  registry.register(defineNativeTool({
    name: 'failing',
    description: 'Reports an error of its own.',
    inputSchema: { type: 'object' },
    run() {
      throw toolError('BOOM', 'it broke', { why: 'on purpose' });
    },
  }));
  registry.register(defineNativeTool({
    name: 'busy',
    description: 'Answers OVERLOADED at once, like a full queue.',
    inputSchema: { type: 'object' },
    run() {
      throw new ToolhostError('OVERLOADED', 'the queue is full; try again later');
    },
  }));
  registry.register(defineNativeTool({
    name: 'text_only',
    description: 'Returns text content blocks without structured JSON.',
    inputSchema: { type: 'object' },
    run: () => richResult([{ type: 'text', text: 'plain words' }]),
  }));
  registry.register(defineNativeTool({
    name: 'policy_probe',
    description: 'Returns the policy and budgets its call resolved to.',
    inputSchema: { type: 'object' },
    run: (_args, ctx) => ({ policy: ctx.policy, budgets: ctx.budgets, conversationId: ctx.conversationId ?? null, agentName: ctx.agentName ?? null }),
  }));
  registry.register(defineNativeTool({
    name: 'tally',
    description: 'Counts its calls in the conversation state.',
    inputSchema: { type: 'object' },
    async run(_args, ctx) {
      const count = (await ctx.getState('tally', 0)) + 1;
      await ctx.setState('tally', count);
      return { count };
    },
  }));
}

// ---------------------------------------------------------------- the tests

describe('the proto', () => {
  it('matches the sw4rm.tool contract field for field', () => {
    const fields = (name: string): Array<[string, number, string, string]> => {
      const message = clientPackage[`sw4rm.tool.${name}`] as unknown as { type: { field: Array<{ name: string; number: number; type: string; typeName: string }> } };
      // Type names come as written in the file: qualify the package-relative ones.
      const qualified = (typeName: string): string => (typeName === '' || typeName.includes('.') ? typeName.replace(/^\./, '') : `sw4rm.tool.${typeName}`);
      return message.type.field.map((field) => [field.name, field.number, field.type, qualified(field.typeName)]);
    };
    expect(fields('ExecutionPolicy')).toEqual([
      ['timeout', 1, 'TYPE_MESSAGE', 'google.protobuf.Duration'],
      ['max_retries', 2, 'TYPE_UINT32', ''],
      ['backoff', 3, 'TYPE_STRING', ''],
      ['worktree_required', 4, 'TYPE_BOOL', ''],
      ['network_policy', 5, 'TYPE_STRING', ''],
      ['privilege_level', 6, 'TYPE_STRING', ''],
      ['budget_cpu_ms', 7, 'TYPE_UINT64', ''],
      ['budget_wall_ms', 8, 'TYPE_UINT64', ''],
    ]);
    expect(fields('ToolCall')).toEqual([
      ['call_id', 1, 'TYPE_STRING', ''],
      ['tool_name', 2, 'TYPE_STRING', ''],
      ['provider_id', 3, 'TYPE_STRING', ''],
      ['content_type', 4, 'TYPE_STRING', ''],
      ['args', 5, 'TYPE_BYTES', ''],
      ['policy', 6, 'TYPE_MESSAGE', 'sw4rm.tool.ExecutionPolicy'],
      ['stream', 7, 'TYPE_BOOL', ''],
    ]);
    expect(fields('ToolFrame')).toEqual([
      ['call_id', 1, 'TYPE_STRING', ''],
      ['frame_no', 2, 'TYPE_UINT64', ''],
      ['final', 3, 'TYPE_BOOL', ''],
      ['content_type', 4, 'TYPE_STRING', ''],
      ['data', 5, 'TYPE_BYTES', ''],
      ['summary', 6, 'TYPE_BYTES', ''],
    ]);
    expect(fields('ToolError')).toEqual([
      ['call_id', 1, 'TYPE_STRING', ''],
      ['error_code', 2, 'TYPE_STRING', ''],
      ['message', 3, 'TYPE_STRING', ''],
    ]);
    const service = clientPackage['sw4rm.tool.ToolService'] as ServiceDefinition;
    expect(Object.fromEntries(Object.entries(service).map(([name, method]) => [name, [method.path, method.requestStream, method.responseStream]]))).toEqual({
      Call: ['/sw4rm.tool.ToolService/Call', false, false],
      CallStream: ['/sw4rm.tool.ToolService/CallStream', false, true],
      Cancel: ['/sw4rm.tool.ToolService/Cancel', false, false],
    });
  });
});

describe('the mappings', () => {
  it('maps an ExecutionPolicy: 0, "" and false are absent; int64s may be strings', () => {
    expect(toPolicyInput(null)).toBeUndefined();
    expect(toPolicyInput({ timeout: null, max_retries: 0, backoff: '', worktree_required: false, network_policy: '', privilege_level: '', budget_cpu_ms: '0', budget_wall_ms: '0' })).toBeUndefined();
    expect(toPolicyInput({ timeout: { seconds: '0', nanos: 0 } })).toBeUndefined();
    expect(toPolicyInput({
      timeout: { seconds: '2', nanos: 500_000_000 },
      max_retries: 2,
      backoff: 'EXPONENTIAL',
      worktree_required: true,
      network_policy: 'deny_all',
      privilege_level: 'Minimal',
      budget_cpu_ms: '150',
      budget_wall_ms: 4000,
    })).toEqual({
      timeout: { seconds: '2', nanos: 500_000_000 },
      max_retries: 2,
      backoff: 'EXPONENTIAL',
      worktree_required: true,
      network_policy: 'deny_all',
      privilege_level: 'Minimal',
      budget_cpu_ms: '150',
      budget_wall_ms: 4000,
    });
  });

  it('maps toolhost codes to gRPC statuses', () => {
    expect(grpcStatusOf('TOOL_NOT_FOUND')).toBe(grpc.status.NOT_FOUND);
    expect(grpcStatusOf('INVALID_INPUT')).toBe(grpc.status.INVALID_ARGUMENT);
    expect(grpcStatusOf('PERMISSION_DENIED')).toBe(grpc.status.PERMISSION_DENIED);
    expect(grpcStatusOf('TOOL_PRIVILEGE_ESCALATION')).toBe(grpc.status.PERMISSION_DENIED);
    expect(grpcStatusOf('WORKTREE_NOT_BOUND')).toBe(grpc.status.FAILED_PRECONDITION);
    expect(grpcStatusOf('OVERLOADED')).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(grpcStatusOf('INTERNAL')).toBe(grpc.status.INTERNAL);
  });

  it('reads args as JSON for application/json (with parameters) or an empty content type', () => {
    expect(parseArgs('', Buffer.from('{"a":1}'))).toEqual({ a: 1 });
    expect(parseArgs('Application/JSON; charset=utf-8', Buffer.from('[1]'))).toEqual([1]);
    expect(parseArgs('application/json', Buffer.alloc(0))).toEqual({});
    expect(() => parseArgs('text/plain', Buffer.from('hi'))).toThrow(expect.objectContaining({ code: 'INVALID_INPUT' }));
    expect(() => parseArgs('', Buffer.from('{nope'))).toThrow(expect.objectContaining({ code: 'INVALID_INPUT' }));
  });
});

describe('the gRPC ToolService', () => {
  let registry: ToolRegistry;
  let server: GrpcServerHandle;
  let client: ToolServiceClient;
  const finished = new Map<string, TerminalEvent>();

  beforeAll(async () => {
    registry = makeRegistry({ defaults: { wallMs: 10_000, maxWallMs: 60_000 }, cancelGraceMs: 200 });
    nativeTools(registry);
    if (hasCGuests) await registry.registerWasmTools([example('ctools'), fixture('hostile')]);
    registry.onCallFinished((_tool, event) => finished.set(event.callId, event));
    server = await startGrpcServer(registry, { host: '127.0.0.1', port: 0 });
    client = connect(server.address);
  });
  afterAll(async () => {
    client?.close();
    await server?.close();
    await registry?.close();
  });

  /** Wait for the registry to report a call's terminal event. */
  async function finishedEvent(callId: string, timeoutMs = 5_000): Promise<TerminalEvent> {
    const until = Date.now() + timeoutMs;
    while (Date.now() < until) {
      const event = finished.get(callId);
      if (event) return event;
      await sleep(10);
    }
    throw new Error(`call ${callId} did not finish within ${timeoutMs} ms`);
  }

  it('listens on the requested loopback address, on an ephemeral port', () => {
    expect(server.host).toBe('127.0.0.1');
    expect(server.port).toBeGreaterThan(0);
    expect(server.address).toBe(`127.0.0.1:${server.port}`);
  });

  describe('Call', () => {
    it('answers one final frame: the result as JSON, accounting in the summary', async () => {
      const frame = await unary(client, { call_id: 'unary-1', tool_name: 'echo', content_type: 'application/json', args: jsonArgs({ text: 'hi' }), provider_id: 'some-provider' });
      expect(frame).toMatchObject({ call_id: 'unary-1', frame_no: 0, final: true, content_type: 'application/json' });
      expect(parse(frame.data)).toEqual({ text: 'hi' });
      const summary = parse(frame.summary);
      expect(summary).toMatchObject({ type: 'result', status: 'ok', accounting: { attempts: 1, events: 0 } });
      expect((summary.accounting as { wallMs: number }).wallMs).toBeGreaterThanOrEqual(0);
    });

    it('makes a call id when the client sends none, and tells it in the response headers', async () => {
      const headers = new Promise<grpc.Metadata>((resolve, reject) => {
        const call = client.Call({ tool_name: 'echo', args: jsonArgs({ text: 'x' }) }, new grpc.Metadata(), {}, (error) => {
          if (error) reject(error);
        });
        call.on('metadata', resolve);
      });
      const frame = await unary(client, { tool_name: 'echo', args: jsonArgs({ text: 'x' }) });
      expect(frame.call_id).toMatch(/^[0-9a-f-]{36}$/);
      expect((await headers).get('toolhost-call-id')[0]).toMatch(/^[0-9a-f-]{36}$/);
    });

    it('answers text/plain for a result with only text blocks', async () => {
      const frame = await unary(client, { tool_name: 'text_only' });
      expect(frame.content_type).toBe('text/plain; charset=utf-8');
      expect(frame.data.toString('utf8')).toBe('plain words');
    });

    it('ends a tool that failed after it started with a final error frame, not a status', async () => {
      const frame = await unary(client, { call_id: 'fail-1', tool_name: 'failing' });
      expect(frame.final).toBe(true);
      expect(parse(frame.summary)).toMatchObject({
        status: 'error',
        error: { code: 'TOOL_ERROR', message: 'it broke', details: { code: 'BOOM', details: { why: 'on purpose' } } },
        accounting: { attempts: 1 },
        partial: false,
      });
      expect(parse(frame.data)).toMatchObject({ type: 'error', code: 'TOOL_ERROR' });
    });

    it('maps the ExecutionPolicy onto the host policy (labels case-insensitive, 0 = host default)', async () => {
      const frame = await unary(client, {
        tool_name: 'policy_probe',
        policy: { timeout: { seconds: 2, nanos: 500_000_000 }, network_policy: 'deny_all', privilege_level: 'minimal', budget_cpu_ms: 0, budget_wall_ms: 4000, backoff: 'Exponential', max_retries: 1 },
      });
      expect(parse(frame.data)).toMatchObject({
        policy: { timeoutMs: 2500, networkPolicy: 'DENY_ALL', privilegeLevel: 'MINIMAL', budgetWallMs: 4000, backoff: 'exponential', maxRetries: 1 },
        budgets: { wallMs: 2500, wallCode: 'TOOL_TIMEOUT', maxRetries: 1 },
      });
      expect((parse(frame.data).policy as Record<string, unknown>).budgetCpuMs).toBeUndefined();
      const defaults = await unary(client, { tool_name: 'policy_probe', policy: {} });
      expect(parse(defaults.data)).toMatchObject({ policy: {}, budgets: { wallMs: 10_000 } });
    });

    it('reads the conversation and agent from request metadata', async () => {
      const metadata = new grpc.Metadata();
      metadata.set('toolhost-conversation-id', 'conv-1');
      metadata.set('toolhost-agent-name', 'tester');
      const probe = await unary(client, { tool_name: 'policy_probe' }, { metadata });
      expect(parse(probe.data)).toMatchObject({ conversationId: 'conv-1', agentName: 'tester' });
      expect(parse((await unary(client, { tool_name: 'tally' }, { metadata })).data)).toEqual({ count: 1 });
      expect(parse((await unary(client, { tool_name: 'tally' }, { metadata })).data)).toEqual({ count: 2 });
    });
  });

  describe('CallStream', () => {
    it('sends one frame per event while the tool runs: frame_no from 0, final on the last only', async () => {
      const { frames, error, status } = await streamCall(client, { call_id: 'stream-1', tool_name: 'chunks', args: jsonArgs({ n: 3 }), stream: true });
      expect(error).toBeUndefined();
      expect(status?.code).toBe(grpc.status.OK);
      expect(frames.map((frame) => frame.frame_no)).toEqual(frames.map((_, i) => i));
      expect(frames.map((frame) => frame.final)).toEqual(frames.map((_, i) => i === frames.length - 1));
      expect(frames.every((frame) => frame.call_id === 'stream-1' && frame.content_type === 'application/json')).toBe(true);
      const data = frames.map((frame) => parse(frame.data));
      expect(data.map((d, i) => (i === data.length - 1 ? 'result' : d.type))).toEqual(['start', 'progress', 'delta', 'progress', 'delta', 'progress', 'delta', 'log', 'result']);
      expect(data[0]).toMatchObject({ type: 'start', tool_id: 'chunks', call_id: 'stream-1', metadata: { executionMode: 'native' } });
      expect(data[1]).toEqual({ type: 'progress', pct: 0, message: 'chunk 0' });
      expect(data[2]).toEqual({ type: 'delta', data: { i: 0 } });
      expect(data[6]).toEqual({ type: 'delta', data: { i: 2 } });
      expect(data[7]).toEqual({ type: 'log', level: 'info', message: 'all chunks sent', source: 'native' });
      expect(data[8]).toEqual({ chunks: 3 });
      const summaries = frames.map((frame) => parse(frame.summary));
      expect(summaries.slice(0, -1)).toEqual(data.slice(0, -1).map((d) => ({ type: d.type })));
      expect(summaries.at(-1)).toMatchObject({ type: 'result', status: 'ok', accounting: { events: 7 } });   // events counts what followed start
    });

    it('ends a failed tool with a final error frame and an OK status', async () => {
      const { frames, error, status } = await streamCall(client, { tool_name: 'failing' });
      expect(error).toBeUndefined();
      expect(status?.code).toBe(grpc.status.OK);
      expect(frames.map((frame) => frame.final)).toEqual([false, true]);
      expect(parse(frames[1]!.summary)).toMatchObject({ status: 'error', error: { code: 'TOOL_ERROR' } });
    });
  });

  describe('Cancel', () => {
    it('answers CANCELLED for a running call, whose stream ends with a final frame that says cancelled and partial', async () => {
      let answer: Promise<ToolError> | undefined;
      const outcome = await streamCall(client, { call_id: 'cancel-1', tool_name: 'slow' }, {
        onFrame: (frame) => {
          // The delta frame arrives while the tool is still running: cancel then.
          if (parse(frame.data).type === 'delta') answer = cancel(client, 'cancel-1');
        },
      });
      expect(await answer).toEqual({ call_id: 'cancel-1', error_code: 'CANCELLED', message: expect.any(String) });
      expect(outcome.error).toBeUndefined();
      const last = outcome.frames.at(-1)!;
      expect(last.final).toBe(true);
      expect(outcome.frames.filter((frame) => frame.final)).toHaveLength(1);
      expect(parse(last.summary)).toMatchObject({ status: 'cancelled', partial: true, error: { code: 'CANCELLED', details: { partial: true, deltas: 1 } } });
    });

    it('answers ALREADY_COMPLETED for a finished call and NOT_FOUND for an unknown one', async () => {
      await unary(client, { call_id: 'done-1', tool_name: 'echo', args: jsonArgs({ text: 'x' }) });
      expect(await cancel(client, 'done-1')).toMatchObject({ call_id: 'done-1', error_code: 'ALREADY_COMPLETED' });
      expect(await cancel(client, 'never-was')).toMatchObject({ call_id: 'never-was', error_code: 'NOT_FOUND' });
      expect(await cancel(client, '')).toMatchObject({ error_code: 'NOT_FOUND' });
    });

    it('ends a cancelled unary Call with a final frame that says cancelled', async () => {
      const started = whenRunning('cancel-2');
      const pending = unary(client, { call_id: 'cancel-2', tool_name: 'slow' });
      await started;
      expect((await cancel(client, 'cancel-2')).error_code).toBe('CANCELLED');
      const frame = await pending;
      expect(frame).toMatchObject({ call_id: 'cancel-2', final: true, frame_no: 0 });
      expect(parse(frame.summary)).toMatchObject({ status: 'cancelled', partial: true, error: { code: 'CANCELLED' } });
    });
  });

  describe('a client that goes away', () => {
    it('cancels its call when its deadline passes (unary)', async () => {
      const error = await rejection(unary(client, { call_id: 'deadline-1', tool_name: 'slow' }, { deadlineMs: 300 }));
      expect(error.code).toBe(grpc.status.DEADLINE_EXCEEDED);
      expect(await finishedEvent('deadline-1')).toMatchObject({ type: 'error', code: 'CANCELLED', stage: 'run' });
    });

    it('cancels its call when its deadline passes (streaming)', async () => {
      const outcome = await streamCall(client, { call_id: 'deadline-2', tool_name: 'slow' }, { deadlineMs: 300 });
      expect(outcome.error?.code).toBe(grpc.status.DEADLINE_EXCEEDED);
      expect(outcome.frames.length).toBeGreaterThanOrEqual(1);
      expect(await finishedEvent('deadline-2')).toMatchObject({ type: 'error', code: 'CANCELLED' });
    });

    it('cancels its call when it cancels the RPC', async () => {
      const outcome = await streamCall(client, { call_id: 'gone-1', tool_name: 'slow' }, {
        onFrame: (frame, call) => {
          if (parse(frame.data).type === 'delta') call.cancel();
        },
      });
      expect(outcome.error?.code).toBe(grpc.status.CANCELLED);
      expect(await finishedEvent('gone-1')).toMatchObject({ type: 'error', code: 'CANCELLED' });
    });
  });

  describe('refusals before the tool runs are gRPC statuses with the toolhost code', () => {
    const cases: Array<[string, ToolCall, grpc.status, string]> = [
      ['an unknown tool', { tool_name: 'no_such_tool' }, grpc.status.NOT_FOUND, 'TOOL_NOT_FOUND'],
      ['an empty tool name', { tool_name: '' }, grpc.status.INVALID_ARGUMENT, 'INVALID_INPUT'],
      ['args that fail the schema', { tool_name: 'echo', args: jsonArgs({ text: 5 }) }, grpc.status.INVALID_ARGUMENT, 'INVALID_INPUT'],
      ['args that are not JSON', { tool_name: 'echo', content_type: 'application/json', args: Buffer.from('{nope') }, grpc.status.INVALID_ARGUMENT, 'INVALID_INPUT'],
      ['a non-JSON content type', { tool_name: 'echo', content_type: 'application/octet-stream', args: Buffer.from([1, 2, 3]) }, grpc.status.INVALID_ARGUMENT, 'INVALID_INPUT'],
      ['an unknown label', { tool_name: 'echo', args: jsonArgs({ text: 'x' }), policy: { network_policy: 'SOMETIMES' } }, grpc.status.INVALID_ARGUMENT, 'INVALID_INPUT'],
      ['more network than granted', { tool_name: 'echo', args: jsonArgs({ text: 'x' }), policy: { network_policy: 'egress_restricted' } }, grpc.status.PERMISSION_DENIED, 'PERMISSION_DENIED'],
      ['more privilege than granted', { tool_name: 'echo', args: jsonArgs({ text: 'x' }), policy: { privilege_level: 'Elevated' } }, grpc.status.PERMISSION_DENIED, 'TOOL_PRIVILEGE_ESCALATION'],
      ['a timeout above the host ceiling', { tool_name: 'echo', args: jsonArgs({ text: 'x' }), policy: { timeout: { seconds: 3600 } } }, grpc.status.PERMISSION_DENIED, 'PERMISSION_DENIED'],
      ['a worktree that is not bound', { tool_name: 'echo', args: jsonArgs({ text: 'x' }), policy: { worktree_required: true } }, grpc.status.FAILED_PRECONDITION, 'WORKTREE_NOT_BOUND'],
      ['a full queue', { tool_name: 'busy' }, grpc.status.RESOURCE_EXHAUSTED, 'OVERLOADED'],
    ];

    for (const [what, request, status, code] of cases) {
      it(`${what}: ${grpc.status[status]} (${code})`, async () => {
        const unaryError = await rejection(unary(client, { call_id: `refused-${code}-${what.length}`, ...request }));
        expect(unaryError.code).toBe(status);
        expect(unaryError.details.startsWith(`${code}: `)).toBe(true);
        expect(metadataCode(unaryError)).toBe(code);
        const streamed = await streamCall(client, request);
        expect(streamed.frames).toEqual([]);
        expect(streamed.error?.code).toBe(status);
        expect(streamed.error?.details.startsWith(`${code}: `)).toBe(true);
        expect(metadataCode(streamed.error)).toBe(code);
      });
    }

    it('puts the call id and the details in the trailing metadata', async () => {
      const error = await rejection(unary(client, { call_id: 'refused-details', tool_name: 'echo', args: jsonArgs({ text: 1 }) }));
      expect(error.metadata.get('toolhost-call-id')[0]).toBe('refused-details');
      const details = error.metadata.get('toolhost-error-details-bin')[0];
      expect(Buffer.isBuffer(details)).toBe(true);
      expect(JSON.parse((details as Buffer).toString('utf8'))).toBeTruthy();
    });

    it('refuses a call_id already in flight, without touching the running call', async () => {
      const started = whenRunning('dup-1');
      const first = unary(client, { call_id: 'dup-1', tool_name: 'slow' });
      await started;
      const error = await rejection(unary(client, { call_id: 'dup-1', tool_name: 'echo', args: jsonArgs({ text: 'x' }) }));
      expect(error.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(error.details).toContain('already in flight');
      // The refusal is reported (with stage `rejected`); the first call is still running.
      expect(finished.get('dup-1')).toMatchObject({ stage: 'rejected', code: 'INVALID_INPUT' });
      expect(await Promise.race([first.then(() => 'ended'), sleep(50).then(() => 'running')])).toBe('running');
      expect((await cancel(client, 'dup-1')).error_code).toBe('CANCELLED');
      expect(parse((await first).summary)).toMatchObject({ status: 'cancelled' });
    });
  });

  describe.runIf(hasCGuests)('sandboxed components', () => {
    it('runs sha256 from the ctools example', async () => {
      const frame = await unary(client, { tool_name: 'sha256', content_type: 'application/json', args: jsonArgs({ text: 'abc' }) });
      expect(parse(frame.data)).toEqual({ sha256: 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad' });
      expect(parse(frame.summary)).toMatchObject({ status: 'ok', accounting: { instance: expect.any(String) } });
    });

    it('ends a guest over its CPU budget with a final CPU_BUDGET_EXCEEDED frame', async () => {
      const { frames, error } = await streamCall(client, { tool_name: 'spin', policy: { budget_cpu_ms: 100, timeout: { seconds: 20 } } });
      expect(error).toBeUndefined();
      expect(frames.at(-1)?.final).toBe(true);
      expect(parse(frames[0]!.data)).toMatchObject({ type: 'start', metadata: { executionMode: 'sandboxed' } });
      const summary = parse(frames.at(-1)!.summary);
      expect(summary).toMatchObject({ status: 'error', error: { code: 'CPU_BUDGET_EXCEEDED' } });
      expect((summary.accounting as { cpuMs: number }).cpuMs).toBeGreaterThanOrEqual(100);
    });

    it('ends a guest past its timeout with a final TOOL_TIMEOUT frame', async () => {
      const frame = await unary(client, { tool_name: 'spin', policy: { timeout: { seconds: 0, nanos: 300_000_000 } } });
      expect(frame.final).toBe(true);
      expect(parse(frame.summary)).toMatchObject({ status: 'error', error: { code: 'TOOL_TIMEOUT' } });
    });
  });
});

describe.runIf(hasCGuests)('a full sandbox queue over gRPC', () => {
  it('answers RESOURCE_EXHAUSTED (OVERLOADED) while the pool is busy', async () => {
    const registry = makeRegistry({ cancelGraceMs: 50, sandbox: { threads: 1, maxQueue: 1 } });
    const server = await startGrpcServer(registry, { port: 0 });
    const client = connect(server.address);
    try {
      await registry.registerWasmTools(fixture('counter'));
      const busy = streamCall(client, { call_id: 'busy-loop', tool_name: 'loop' });
      await sleep(100);
      const queued = unary(client, { tool_name: 'counter' });
      await sleep(20);
      const error = await rejection(unary(client, { tool_name: 'counter' }));
      expect(error.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
      expect(metadataCode(error)).toBe('OVERLOADED');
      expect((await cancel(client, 'busy-loop')).error_code).toBe('CANCELLED');
      expect(parse((await busy).frames.at(-1)!.summary)).toMatchObject({ status: 'cancelled' });
      expect(parse((await queued).data)).toEqual({ count: 1 });
    } finally {
      client.close();
      await server.close();
      await registry.close();
    }
  });
});

describe('closing the server', () => {
  it('waits a bounded time for calls in flight, then cancels them', async () => {
    const registry = makeRegistry({ cancelGraceMs: 50 });
    nativeTools(registry);
    const ended = new Map<string, TerminalEvent>();
    registry.onCallFinished((_tool, event) => ended.set(event.callId, event));
    const server = await startGrpcServer(registry, { port: 0, shutdownTimeoutMs: 200 });
    const client = connect(server.address);
    try {
      const started = whenRunning('close-1');
      const pending = streamCall(client, { call_id: 'close-1', tool_name: 'slow' });
      await started;
      const before = Date.now();
      await server.close();
      expect(Date.now() - before).toBeLessThan(2_000);
      const outcome = await pending;
      expect(outcome.error?.code).toBeDefined();
      for (let i = 0; i < 100 && !ended.has('close-1'); i += 1) await sleep(10);
      expect(ended.get('close-1')).toMatchObject({ code: 'CANCELLED' });
      await server.close();
    } finally {
      client.close();
      await registry.close();
    }
  });

  it('refuses bad options', async () => {
    const registry = makeRegistry();
    try {
      await expect(startGrpcServer(registry, { port: 70_000 })).rejects.toThrow(TypeError);
      await expect(startGrpcServer(registry, { port: 1.5 })).rejects.toThrow(TypeError);
    } finally {
      await registry.close();
    }
  });
});
