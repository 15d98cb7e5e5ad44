/**
 * Messages of a shared MCP session (2025 era, in a fleet) that belong to
 * another host. Without sticky routing, a client's POST can land on any host,
 * but some messages answer something only one host holds:
 *
 * - a response to a server-to-client request (a ping after progress, a tool's
 *   sampling or elicitation request) must reach the host whose server sent it;
 * - `notifications/cancelled` must reach the host running the request.
 *
 * Such a message, when this host does not hold what it answers, is relayed
 * through the session directory to every host; the host that holds it
 * delivers it to its server (a cancel is also kept here, as an early cancel,
 * in case its request arrives later on this host).
 *
 * Guarantees: a relayed message is delivered only to the same session's
 * server, and only when it answers a request that server sent (a response) or
 * is running (a cancel); anything else relayed is dropped. The host that
 * relays it has checked that the request's principal owns the session.
 *
 * Traced hosts: the relay is a CLIENT span `fleet.mcp.relay` in the message's own trace (a cancel's
 * `params._meta.traceparent`, else the HTTP request's `traceparent` header), whose context travels beside the
 * message (capped again on arrival: core/tracing.ts `carrierOf`); the host that delivers it opens a SERVER span
 * `fleet.mcp.deliver` under it. Both say the kind, the session and the request id answered or cancelled.
 */
import { isJSONRPCErrorResponse, isJSONRPCNotification, isJSONRPCRequest, isJSONRPCResultResponse, type JSONRPCMessage, type MessageExtraInfo, type RequestId } from '@modelcontextprotocol/sdk/types.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { carrierOf, epochNow, type CallTracer, type TraceCarrier, type TraceSpan } from '../core/tracing.js';
import { clip, headerCarrier, recordHeader } from './mcp-trace.js';

export interface SessionRelay {
  /** A message relayed by another host for this session; says what it delivered to the server (nothing: not this host's). */
  deliver(message: JSONRPCMessage): RelayedKind | undefined;
}

/** What a relayed message is: an answer to a server-to-client request, or a client's cancel. */
export type RelayedKind = 'response' | 'cancel';

/** The kind of a message that may be relayed. */
export function relayedKind(message: JSONRPCMessage): RelayedKind | undefined {
  if (isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message)) return 'response';
  return cancelledRequestId(message) === undefined ? undefined : 'cancel';
}

/**
 * Wrap `transport` (after the server and the cancellations wrapper are
 * connected) so that messages for another host go to `relay`.
 * `onSetLevel` is told of every `logging/setLevel` request (the session's state); the request reaches
 * the server once it has resolved.
 */
export function relayForeignMessages(transport: Transport, relay: (message: JSONRPCMessage, extra: MessageExtraInfo | undefined) => void, onSetLevel: (level: string) => Promise<void>): SessionRelay {
  const receive = transport.onmessage;
  if (!receive) throw new Error('relayForeignMessages: connect the MCP server to the transport first');
  /** Requests this host's server sent to the client and has no answer for yet. */
  const asked = new Set<RequestId>();
  /** Requests of the client this host's server is running. */
  const running = new Set<RequestId>();

  transport.onmessage = (message, extra) => {
    if (isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message)) {
      const id = message.id;
      if (id !== undefined && !asked.delete(id)) {
        relay(message, extra);
        return;
      }
    } else if (isJSONRPCRequest(message)) {
      running.add(message.id);
      if (message.method === 'logging/setLevel' && typeof message.params?.level === 'string') {
        // Stored before it is answered: the client's next request, on any host, sees the new level.
        void onSetLevel(message.params.level).finally(() => receive.call(transport, message, extra));
        return;
      }
    } else {
      const cancelled = cancelledRequestId(message);
      // Relayed, and kept here too (an early cancel, in case its request arrives later on this host).
      if (cancelled !== undefined && !running.delete(cancelled)) relay(message, extra);
    }
    receive.call(transport, message, extra);
  };

  const send = transport.send.bind(transport);
  transport.send = (message, options) => {
    if (isJSONRPCRequest(message)) asked.add(message.id);
    else if ((isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message)) && message.id !== undefined) running.delete(message.id);
    return send(message, options);
  };

  return {
    deliver(message) {
      if (isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message)) {
        if (message.id === undefined || !asked.delete(message.id)) return undefined;
        receive.call(transport, message);
        return 'response';
      }
      const cancelled = cancelledRequestId(message);
      if (cancelled === undefined || !running.delete(cancelled)) return undefined;
      receive.call(transport, message);
      return 'cancel';
    },
  };
}

function cancelledRequestId(message: JSONRPCMessage): RequestId | undefined {
  if (!isJSONRPCNotification(message) || message.method !== 'notifications/cancelled') return undefined;
  const requestId = (message.params as { requestId?: unknown } | undefined)?.requestId;
  return typeof requestId === 'string' || typeof requestId === 'number' ? requestId : undefined;
}

/** The relaying host's CLIENT span of a message it relays: in the message's own trace (a cancel's `_meta`, else the HTTP request's header). */
export function openRelaySpan(tracer: CallTracer, kind: RelayedKind, message: JSONRPCMessage, extra: MessageExtraInfo | undefined, sessionId: string): TraceSpan {
  const parent = carrierOf(metaOf(message)) ?? headerCarrier(recordHeader(extra?.requestInfo?.headers));
  return tracer.startSpan('fleet.mcp.relay', { kind: 'client', ...(parent === undefined ? {} : { parent }), attributes: relayAttributes(kind, message, sessionId) });
}

/**
 * `deliver` inside the delivering host's SERVER span, child of the relay's context (`trace`, as the relaying host
 * sent it), else of the message's own `_meta`; no span when this host does not hold what the message answers.
 */
export function deliverTraced(tracer: CallTracer | undefined, relay: SessionRelay, message: JSONRPCMessage, sessionId: string, trace: TraceCarrier | undefined): RelayedKind | undefined {
  if (tracer === undefined) return relay.deliver(message);
  const started = epochNow();
  const delivered = relay.deliver(message);
  if (delivered !== undefined) {
    const parent = trace ?? carrierOf(metaOf(message));
    tracer.startSpan('fleet.mcp.deliver', { kind: 'server', startTime: started, ...(parent === undefined ? {} : { parent }), attributes: relayAttributes(delivered, message, sessionId) }).end();
  }
  return delivered;
}

function relayAttributes(kind: RelayedKind, message: JSONRPCMessage, sessionId: string): Record<string, string | undefined> {
  const id = kind === 'cancel' ? cancelledRequestId(message) : (message as { id?: RequestId }).id;
  return { 'toolhost.relay.kind': kind, 'mcp.session.id': sessionId, 'jsonrpc.request.id': id === undefined ? undefined : clip(String(id)) };
}

function metaOf(message: JSONRPCMessage): Record<string, unknown> | undefined {
  const meta = (message as { params?: { _meta?: unknown } }).params?._meta;
  return typeof meta === 'object' && meta !== null ? meta as Record<string, unknown> : undefined;
}
