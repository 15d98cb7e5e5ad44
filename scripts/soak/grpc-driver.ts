/**
 * Soak calls over gRPC with grpc-js and the proto in proto/ (loaded the way a
 * sw4rm client in another language would: its own loader options). Variant 0
 * is the unary `Call`, cancelled with the `Cancel` RPC by call id; variant 1
 * is `CallStream`, cancelled by the client cancelling the stream. A request's
 * answer is its final frame, or the RPC's error status; frames after a final
 * one, or two finals, count as duplicated terminals.
 */
import { performance } from 'node:perf_hooks';
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { toolProtoPath, type ToolCallMessage as ToolCall, type ToolErrorMessage as ToolError, type ToolFrameMessage as ToolFrame } from '../../host/servers/grpc/proto.js';
import { CLIENT_ABORTED, NO_ANSWER, judge, type CallOutcome } from './outcome.js';
import type { PlannedCall } from './plan.js';

type Callback<T> = (error: grpc.ServiceError | null, value?: T) => void;
interface ToolServiceClient extends grpc.Client {
  Call(request: ToolCall, metadata: grpc.Metadata, options: grpc.CallOptions, callback: Callback<ToolFrame>): grpc.ClientUnaryCall;
  CallStream(request: ToolCall, metadata: grpc.Metadata, options: grpc.CallOptions): grpc.ClientReadableStream<ToolFrame>;
  Cancel(request: ToolCall, callback: Callback<ToolError>): grpc.ClientUnaryCall;
}

/** The client's own deadline on one request: far above any planned call, so hitting it means no answer came. */
const DEADLINE_MS = 120_000;

export class GrpcDriver {
  readonly #clients: ToolServiceClient[];

  private constructor(clients: ToolServiceClient[]) {
    this.#clients = clients;
  }

  static connect(address: string, channels: number): GrpcDriver {
    const definition = loadSync(toolProtoPath(), { keepCase: true, longs: Number, defaults: true });
    const loaded = grpc.loadPackageDefinition(definition) as unknown as { sw4rm: { tool: { ToolService: grpc.ServiceClientConstructor } } };
    const Service = loaded.sw4rm.tool.ToolService;
    // Distinct channels (not grpc-js's shared subchannel): each its own HTTP/2 connection.
    const clients = Array.from({ length: channels }, (_, index) =>
      new Service(address, grpc.credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1, 'soak.channel': index }) as unknown as ToolServiceClient);
    return new GrpcDriver(clients);
  }

  call(call: PlannedCall): Promise<CallOutcome> {
    const { kind, n } = call;
    const client = this.#clients[Math.floor(n / 3) % this.#clients.length]!;
    const request: ToolCall = {
      call_id: call.id,
      tool_name: kind.tool,
      args: Buffer.from(JSON.stringify(kind.args(n)), 'utf8'),
      content_type: 'application/json',
      ...(kind.policy === undefined ? {} : { policy: kind.policy }),
    };
    const metadata = new grpc.Metadata();
    if (kind.conversation !== undefined) metadata.set('toolhost-conversation-id', kind.conversation(n));
    const options: grpc.CallOptions = { deadline: Date.now() + DEADLINE_MS };
    const startedAt = performance.now();
    const done = (code: string, answers: number, value?: unknown, detail?: string): CallOutcome => {
      const wrong = judge(kind, n, code, value);
      return { n, channel: 'grpc', kind: kind.name, code, answers, ...(wrong === undefined ? {} : { wrong }), ...(detail === undefined ? {} : { detail }), ms: performance.now() - startedAt };
    };
    if (call.variant === 0) {
      return new Promise((resolve) => {
        let answers = 0;
        // Cancel by id; a Cancel that overtook its call (NOT_FOUND: not started yet) is sent again.
        let tries = 0;
        const cancel = (): void => {
          tries += 1;
          client.Cancel({ call_id: call.id, tool_name: '' }, (error, answer) => {
            if (!error && answer?.error_code === 'NOT_FOUND' && tries < 5 && answers === 0) timer = setTimeout(cancel, 20);
          });
        };
        let timer = kind.cancelAfterMs === undefined ? undefined : setTimeout(cancel, kind.cancelAfterMs);
        client.Call(request, metadata, options, (error, frame) => {
          clearTimeout(timer);
          answers += 1;
          if (error) resolve(done(statusCode(error), error.code === grpc.status.DEADLINE_EXCEEDED ? 0 : answers));
          else resolve(finalOutcome(frame!, answers, done));
        });
      });
    }
    return new Promise((resolve) => {
      const stream = client.CallStream({ ...request, stream: true }, metadata, options);
      let finals = 0;
      let afterFinal = 0;
      let last: ToolFrame | undefined;
      let cancelled = false;
      const timer = kind.cancelAfterMs === undefined ? undefined : setTimeout(() => {
        cancelled = true;
        stream.cancel();
      }, kind.cancelAfterMs);
      stream.on('data', (frame: ToolFrame) => {
        if (finals > 0) afterFinal += 1;
        if (frame.final) {
          finals += 1;
          last = frame;
        }
      });
      stream.on('error', () => undefined);
      stream.on('status', (status: grpc.StatusObject) => {
        clearTimeout(timer);
        if (last !== undefined) resolve(finalOutcome(last, finals + afterFinal, done));
        else if (cancelled && status.code === grpc.status.CANCELLED) resolve(done(CLIENT_ABORTED, 1));
        else if (status.code === grpc.status.OK) resolve(done(NO_ANSWER, 0));
        else resolve(done(statusCode(status), status.code === grpc.status.DEADLINE_EXCEEDED ? 0 : 1));
      });
    });
  }

  close(): void {
    for (const client of this.#clients) client.close();
  }
}

/** The call's code from its final frame's summary (`status: ok`, or the error's code), and the result's value. */
function finalOutcome(frame: ToolFrame, answers: number, done: (code: string, answers: number, value?: unknown, detail?: string) => CallOutcome): CallOutcome {
  try {
    const summary = JSON.parse(frame.summary.toString('utf8')) as { status?: string; error?: { code?: string; message?: string; details?: { reason?: unknown } } };
    if (summary.status === 'ok') return done('ok', answers, JSON.parse(frame.data.toString('utf8')) as unknown);
    const error = summary.error;
    const detail = `${String(error?.details?.reason ?? '')} ${error?.message ?? ''}`.trim().slice(0, 160);
    return done(error?.code ?? 'grpc:final frame without a code', answers, undefined, detail);
  } catch {
    return done('grpc:undecodable final frame', answers);
  }
}

/** An RPC's error: toolhost's code from the trailers when it sent one, else the gRPC status name. */
function statusCode(status: { code: grpc.status; metadata?: grpc.Metadata }): string {
  const code = status.metadata?.get('toolhost-error-code')[0];
  if (typeof code === 'string' && code.length > 0) return code;
  return `grpc:${grpc.status[status.code] ?? status.code}`;
}
