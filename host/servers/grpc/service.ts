/**
 * The ToolService handlers: Call, CallStream and Cancel over the registry's one
 * call path. Nothing is decided here: lookup, policy, validation, budgets and
 * events all happen in the call path; this file translates.
 * (Over 400 lines: the three RPCs share the call start, the owners table and the span of each RPC.)
 *
 * - A call refused before its tool ran (the call path's `stage: 'rejected'`,
 *   or OVERLOADED with nothing but `start` before it) ends with a gRPC status
 *   (see status.ts). Anything after the tool started (a budget, a crash, the
 *   tool's error, a cancel) ends with a normal final frame whose summary says
 *   `"status":"error"` (or `"cancelled"`).
 * - CallStream holds the `start` frame for one event-loop turn, so that an
 *   OVERLOADED that follows at once can still be a status. A later OVERLOADED
 *   (after frames went out) ends the stream with a final error frame.
 * - A client that goes away (RST_STREAM, a closed connection) or whose
 *   deadline passes aborts the call's signal: the call is cancelled, the way
 *   `registry.cancel` does it. Once the call is over, nothing is cancelled.
 * - Cancel(ToolCall) reads only `call_id` and answers a ToolError whose
 *   error_code is CANCELLED, NOT_FOUND or ALREADY_COMPLETED, for a call on
 *   any host of the fleet (FLEET_UNAVAILABLE when the fleet cannot answer).
 *   Call ids are per principal (core/principal-scope.ts), and the caller's
 *   principal goes with the cancel on every path, local and fleet-wide: a
 *   client reaches only its own principal's calls, and another principal's
 *   id (in flight or finished, here or on another host) answers NOT_FOUND.
 *   On this host, a client cancels only calls it started over gRPC: another
 *   client's call in flight here (over MCP or the library) answers NOT_FOUND.
 * - With a bearer token (or named tokens, or OAuth access tokens: ../auth/),
 *   every RPC needs `authorization: Bearer <token>` metadata (the same tokens
 *   as MCP): UNAUTHENTICATED otherwise, with `toolhost-error-code:
 *   PERMISSION_DENIED` (UNAVAILABLE when an access token cannot be checked
 *   now). The token's principal scopes the call's conversation (see
 *   principals.ts); an access token's tenant and label ceiling go with the call.
 * - A client's `call_id` must follow the call-id rules (INVALID_ARGUMENT,
 *   not echoed back).
 */
import {
  Metadata,
  type handleServerStreamingCall,
  type handleUnaryCall,
  type sendUnaryData,
  type ServerUnaryCall,
  type ServerWritableStream,
  type UntypedServiceImplementation,
  type ServerErrorResponse,
} from '@grpc/grpc-js';
import { DEFAULT_MAX_CALL_ID_LENGTH } from '../../core/call/ids.js';
import { ChurnTable } from '../../core/churn-table.js';
import { callKey } from '../../core/principal-scope.js';
import type { ServerLimitMetrics } from '../metrics.js';
import type { NamedToken } from '../principals.js';
import { createAuthenticator, type OAuthVerifier } from '../auth/authenticator.js';
import type { Authenticator } from '../auth/caller.js';
import type { OAuthOptions } from '../auth/oauth-options.js';
import type { CallStream } from '../../core/call/options.js';
import { authenticateGrpc, callerPrincipal, type Principal, type Who } from './authenticate.js';
import { toErrorData, type CancelOutcome } from '../../base/errors.js';
import { isTerminal, type TerminalEvent, type ToolEvent } from '../../core/events.js';
import type { Logger } from '../../base/logger.js';
import type { ToolRegistry } from '../../core/registry.js';
import { parseToolCall, requestCallId, requestCallIdProblem, type ParsedToolCall } from './call-request.js';
import { malformedRequestReason } from './proto.js';
import { FrameBuilder } from './frames.js';
import type { ToolCallMessage, ToolErrorMessage, ToolFrameMessage } from './proto.js';
import { CALL_ID_METADATA_KEY, toServiceError } from './status.js';
import { endGrpcSpan, openGrpcSpan } from './trace.js';
import type { TraceSpan } from '../../core/tracing.js';

/** What every server call has (grpc-js does not export its `ServerSurfaceCall`); a writable stream is one too. */
type SurfaceCall = ServerUnaryCall<ToolCallMessage, unknown>;

/** What the gRPC service needs from a registry (the package's `ToolRegistry` has it all). */
export type GrpcToolSource = Pick<ToolRegistry, 'stream' | 'cancel' | 'logger'> & Partial<Pick<ToolRegistry, 'cancelAnywhere' | 'callState' | 'tracer'>>;

export interface ToolServiceOptions {
  /** The worktree bound to a tool's calls (the call path confines the tool to it). */
  worktree?: (toolName: string) => string | undefined;
  /** When set, every RPC needs `authorization: Bearer <token>` metadata (UNAUTHENTICATED otherwise); its principal is `bearer`. */
  bearerToken?: string;
  /** Named tokens, each a principal of its own (beside or instead of `bearerToken`). */
  tokens?: NamedToken[];
  /** OAuth 2.1 access tokens (JWTs of `issuer` for the resource `audience`), beside or instead of static tokens. */
  oauth?: OAuthOptions;
  /** Instead of `oauth`: a verifier shared with the MCP HTTP server (`createOAuthVerifier`), so the key set is fetched once. */
  oauthVerifier?: OAuthVerifier;
  /** The authenticator to use as it is (the gRPC server makes one for its services; the token options are then not read). */
  authenticator?: Authenticator | undefined;
  /** Longest accepted call id (default 128; keep it equal to the registry's `callIds.maxLength`). */
  maxCallIdLength?: number;
  /** Where refusals are counted (toolhost's `createMetrics(...).limits`). */
  limitMetrics?: ServerLimitMetrics;
}

export interface ToolServiceHandlers extends UntypedServiceImplementation {
  Call: handleUnaryCall<ToolCallMessage, ToolFrameMessage>;
  CallStream: handleServerStreamingCall<ToolCallMessage, ToolFrameMessage>;
  Cancel: handleUnaryCall<ToolCallMessage, ToolErrorMessage>;
}

const CANCEL_MESSAGES: Record<CancelOutcome, string> = {
  CANCELLED: 'the call is being cancelled; its stream ends with a final frame whose summary says cancelled',
  NOT_FOUND: 'no call with this call_id is in flight or finished recently',
  ALREADY_COMPLETED: 'the call had already finished',
};

/** The ToolService implementation, for `server.addService(toolServiceDefinition(), handlers)`. */
export function createToolServiceHandlers(registry: GrpcToolSource, options: ToolServiceOptions = {}): ToolServiceHandlers {
  if (options.worktree !== undefined && typeof options.worktree !== 'function') {
    throw new TypeError('options.worktree must be a function (toolName) => string | undefined');
  }
  const auth = options.authenticator ?? createAuthenticator(options);
  const log = registry.logger.child({ component: 'grpc' });
  const maxCallIdLength = options.maxCallIdLength ?? DEFAULT_MAX_CALL_ID_LENGTH;
  /** gRPC calls in flight, by key (the id scoped by the principal that started it). */
  const owners = new ChurnTable<string, true>();
  /** The caller, or the refusal to answer. */
  const authenticate = (call: SurfaceCall): Promise<Who | { refused: ServerErrorResponse }> =>
    authenticateGrpc(auth, call, (reason) => options.limitMetrics?.refused('grpc', reason));
  const context: ServiceContext = { registry, options, log, owners, maxCallIdLength };
  const handlers: ToolServiceHandlers = {
    Call(call, given) {
      // Traced: one SERVER span per RPC, ended with the status it answers.
      const span = openGrpcSpan(registry.tracer, 'Call', call.metadata);
      const callback: typeof given = span === undefined ? given : (error, value) => {
        endGrpcSpan(span, error);
        given(error, value);
      };
      authenticate(call).then((who) => {
        if ('refused' in who) return callback(who.refused);
        return handleCall(context, who, call, callback, span);
      }).catch((error: unknown) => {
        log.error({ err: error instanceof Error ? error.message : String(error) }, 'the gRPC Call handler failed');
        callback(toServiceError(toErrorData(error)));
      });
    },
    CallStream(call) {
      const span = openGrpcSpan(registry.tracer, 'CallStream', call.metadata);
      if (span !== undefined) {
        let status: { code?: number; metadata?: Metadata } | undefined;
        call.once('error', (error: { code?: number; metadata?: Metadata }) => { status ??= error; });
        const end = (): void => endGrpcSpan(span, status ?? (call.cancelled ? { code: 1 } : null));
        call.once('finish', end);
        call.once('close', end);
      }
      authenticate(call).then((who) => {
        if ('refused' in who) {
          if (!isGone(call)) call.emit('error', who.refused);
          return;
        }
        return handleCallStream(context, who, call, span);
      }).catch((error: unknown) => {
        log.error({ err: error instanceof Error ? error.message : String(error) }, 'the gRPC CallStream handler failed');
        if (!isGone(call)) call.emit('error', toServiceError(toErrorData(error)));
      });
    },
    Cancel(call, given) {
      const span = openGrpcSpan(registry.tracer, 'Cancel', call.metadata);
      const callback: typeof given = span === undefined ? given : (error, value) => {
        span.setAttributes({ 'toolhost.cancel.outcome': value?.error_code });
        endGrpcSpan(span, error);
        given(error, value);
      };
      authenticate(call).then((who) => {
        if ('refused' in who) return callback(who.refused);
        handleCancel(context, who.principal, call, callback, span);
      }).catch((error: unknown) => callback(toServiceError(toErrorData(error))));
    },
  };
  return handlers;
}

/** Cancel: the caller's own call, by id, here or (with a fleet) on the host running it. */
function handleCancel(context: ServiceContext, who: Principal, call: ServerUnaryCall<ToolCallMessage, ToolErrorMessage>, callback: sendUnaryData<ToolErrorMessage>, span?: TraceSpan): void {
  const { registry, options, log, owners, maxCallIdLength } = context;
  const malformed = malformedRequestReason(call.request);
  if (malformed !== undefined) {
    return callback(toServiceError({ code: 'INVALID_INPUT', message: `the request is not a valid sw4rm.tool.ToolCall message: ${malformed}`, details: { reason: 'malformed' } }));
  }
  const callId = typeof call.request.call_id === 'string' ? call.request.call_id : '';
  if (callId.length === 0) {
    callback(null, { call_id: '', error_code: 'NOT_FOUND', message: 'call_id is empty: there is no call to cancel' });
    return;
  }
  const problem = requestCallIdProblem(call.request, maxCallIdLength);
  if (problem !== undefined) {
    options.limitMetrics?.refused('grpc', 'call_id');
    return callback(toServiceError({ code: 'INVALID_INPUT', message: problem }));
  }
  const principal = callerPrincipal(who);
  // The caller's own call in flight here, not started over gRPC (MCP, the library), is not this client's either.
  const notYours = !owners.has(callKey(principal, callId)) && registry.callState?.(callId, principal) === 'in_flight';
  const answer = (outcome: CancelOutcome): void => {
    log.debug({ callId, outcome }, 'gRPC Cancel');
    callback(null, { call_id: callId, error_code: outcome, message: CANCEL_MESSAGES[outcome] });
  };
  // Fleet-wide when the registry has a fleet (the call may run on another host); else this host's tracker.
  // Either way with the caller's principal: only its own calls are looked up.
  if (notYours || registry.cancelAnywhere === undefined) {
    answer(notYours ? 'NOT_FOUND' : registry.cancel(callId, principal));
    return;
  }
  registry.cancelAnywhere(callId, principal, span).then(answer, (error: unknown) => {
    const data = toErrorData(error, callId);
    callback(null, { call_id: callId, error_code: data.code, message: data.message });
  });
}

/** Call: run to the terminal event and answer its frame alone. */
interface ServiceContext {
  registry: GrpcToolSource;
  options: ToolServiceOptions;
  log: Logger;
  /** The keys of the gRPC calls in flight (a ChurnTable, not a Map: see churn-table.ts). */
  owners: ChurnTable<string, true>;
  maxCallIdLength: number;
}

async function handleCall(
  context: ServiceContext,
  who: Who,
  call: ServerUnaryCall<ToolCallMessage, ToolFrameMessage>,
  callback: sendUnaryData<ToolFrameMessage>,
  span?: TraceSpan,
): Promise<void> {
  const started = startCall(context, who, call, span);
  if ('refused' in started) {
    callback(started.refused);
    return;
  }
  const { stream, unwatch } = started;
  try {
    let onlyStart = true;
    let deltas = 0;
    let terminal: TerminalEvent | undefined;
    for await (const event of stream) {
      if (isTerminal(event)) {
        terminal = event;
        break;
      }
      if (event.type === 'delta') deltas += 1;
      if (event.type !== 'start') onlyStart = false;
    }
    if (terminal === undefined) {
      callback(toServiceError({ code: 'INTERNAL', message: 'the call ended without a terminal event' }, stream.callId));
      return;
    }
    if (isRefusal(terminal, onlyStart)) {
      callback(toServiceError(toErrorData(terminal, stream.callId), stream.callId));
      return;
    }
    callback(null, new FrameBuilder(stream.callId).unary(terminal, deltas));
  } finally {
    unwatch();
  }
}

/** CallStream: one frame per event, `final` on the terminal event's frame. */
async function handleCallStream(
  context: ServiceContext,
  who: Who,
  call: ServerWritableStream<ToolCallMessage, ToolFrameMessage>,
  span?: TraceSpan,
): Promise<void> {
  const started = startCall(context, who, call, span);
  if ('refused' in started) {
    call.emit('error', started.refused);
    return;
  }
  const { stream, unwatch } = started;
  const frames = new FrameBuilder(stream.callId);
  let held: ToolEvent | undefined;
  let heldTimer: NodeJS.Immediate | undefined;
  /** Write one event's frame (dropped once the client is gone); false when the client is behind. */
  const write = (event: ToolEvent): boolean => {
    const frame = frames.next(event);
    if (isGone(call)) return true;
    return call.write(frame);
  };
  const flushHeld = (): void => {
    if (heldTimer !== undefined) clearImmediate(heldTimer);
    heldTimer = undefined;
    if (held === undefined) return;
    const event = held;
    held = undefined;
    write(event);
  };
  try {
    for await (const event of stream) {
      if (event.type === 'start' && frames.count === 0 && held === undefined) {
        held = event;
        heldTimer = setImmediate(flushHeld);
        continue;
      }
      if (isTerminal(event) && isRefusal(event, frames.count === 0)) {
        if (heldTimer !== undefined) clearImmediate(heldTimer);
        held = undefined;
        if (!isGone(call)) call.emit('error', toServiceError(toErrorData(event, stream.callId), stream.callId));
        return;
      }
      flushHeld();
      const flowing = write(event);
      if (isTerminal(event)) {
        if (!isGone(call)) call.end();
        return;
      }
      if (!flowing) await drained(call);
    }
    // The call path always ends with a terminal event; this is a safety net.
    if (!isGone(call)) call.emit('error', toServiceError({ code: 'INTERNAL', message: 'the call ended without a terminal event' }, stream.callId));
  } finally {
    if (heldTimer !== undefined) clearImmediate(heldTimer);
    unwatch();
  }
}

type Started = { stream: CallStream; unwatch: () => void } | { refused: ReturnType<typeof toServiceError> };

/** Parse the request, start the call with a signal the client's cancel and deadline abort, and send the call id. */
function startCall(context: ServiceContext, who: Who, call: SurfaceCall, span: TraceSpan | undefined): Started {
  const { registry, options, log, owners } = context;
  const malformed = malformedRequestReason(call.request);
  if (malformed !== undefined) {
    return { refused: toServiceError({ code: 'INVALID_INPUT', message: `the request is not a valid sw4rm.tool.ToolCall message: ${malformed}`, details: { reason: 'malformed' } }) };
  }
  const problem = requestCallIdProblem(call.request, context.maxCallIdLength);
  if (problem !== undefined) {
    options.limitMetrics?.refused('grpc', 'call_id');
    return { refused: toServiceError({ code: 'INVALID_INPUT', message: problem, details: { reason: 'call_id' } }) };
  }
  const callId = requestCallId(call.request);
  let parsed: ParsedToolCall;
  try {
    parsed = parseToolCall(call.request, call.metadata, callId, options.worktree);
  } catch (error) {
    return { refused: toServiceError(toErrorData(error, callId), callId) };
  }
  log.debug({ callId, tool: parsed.toolName, ...(parsed.providerId === undefined ? {} : { providerId: parsed.providerId }) }, 'gRPC call');
  const abort = new AbortController();
  const unwatchClient = watchClient(call, abort);
  const caller = callerPrincipal(who.principal);
  // What the credentials say (principal, tenant, ceiling) comes last: nothing in the request overrides it.
  const stream = registry.stream(parsed.toolName, parsed.args, { ...parsed.options, signal: abort.signal, ...(caller === undefined ? {} : { principal: caller }), ...who.adds, ...(span === undefined ? {} : { span }) });
  // The id is ours while our call runs (a refused duplicate id does not take it over).
  const key = callKey(caller, callId);
  const owned = !owners.has(key);
  if (owned) owners.set(key, true);
  const unwatch = (): void => {
    unwatchClient();
    if (owned) owners.delete(key);
  };
  const metadata = new Metadata();
  metadata.set(CALL_ID_METADATA_KEY, /^[\x20-\x7e]*$/.test(callId) ? callId : encodeURIComponent(callId));
  if (!isGone(call)) call.sendMetadata(metadata);
  return { stream, unwatch };
}

/** A refusal: the call path's `rejected` stage, or OVERLOADED before anything but `start`. */
function isRefusal(terminal: TerminalEvent, nothingButStart: boolean): boolean {
  if (terminal.type !== 'error') return false;
  return terminal.stage === 'rejected' || (terminal.code === 'OVERLOADED' && nothingButStart);
}

/**
 * Abort `abort` when the client cancels (grpc-js's `cancelled`, which also
 * follows a deadline the server enforces) or its deadline passes. Returns the
 * function that stops watching (call it once the call is over).
 */
function watchClient(call: SurfaceCall, abort: AbortController): () => void {
  const onCancelled = (): void => abort.abort();
  call.on('cancelled', onCancelled);
  if (call.cancelled) abort.abort();
  let timer: NodeJS.Timeout | undefined;
  const deadline = call.getDeadline();
  const at = deadline instanceof Date ? deadline.getTime() : deadline;
  if (Number.isFinite(at)) {
    const delay = Math.max(0, at - Date.now());
    // setTimeout cannot wait longer than 2^31-1 ms; grpc-js still reports such a deadline as `cancelled`.
    if (delay <= 2_147_483_647) {
      timer = setTimeout(() => abort.abort(), delay);
      timer.unref?.();
    }
  }
  return () => {
    call.removeListener('cancelled', onCancelled);
    clearTimeout(timer);
  };
}

function isGone(call: ServerWritableStream<ToolCallMessage, ToolFrameMessage> | SurfaceCall): boolean {
  if (call.cancelled) return true;
  const writable = call as Partial<Pick<ServerWritableStream<ToolCallMessage, ToolFrameMessage>, 'destroyed' | 'writableEnded'>>;
  return writable.destroyed === true || writable.writableEnded === true;
}

/** Wait until the client reads again, or goes away. */
function drained(call: ServerWritableStream<ToolCallMessage, ToolFrameMessage>): Promise<void> {
  if (isGone(call)) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      for (const name of ['drain', 'cancelled', 'close', 'error'] as const) call.removeListener(name, done);
      resolve();
    };
    for (const name of ['drain', 'cancelled', 'close', 'error'] as const) call.once(name, done);
  });
}

