/**
 * Cancelled requests over MCP Streamable HTTP, as the SDK leaves them.
 *
 * MCP says a cancelled request gets no response, and the SDK keeps to it:
 * the handler's signal is aborted and its reply dropped. But over Streamable
 * HTTP each request's POST holds an event stream that the transport closes
 * only once the request's response was sent, so a cancelled request's stream
 * (and its socket, and the session's "in use" mark, which keeps it from
 * expiring) stayed open for good: one socket per cancel, a way for any client
 * to run the host out of file descriptors (found by `npm run soak`).
 *
 * A cancel can also arrive before its request (two POSTs racing on two
 * connections); the SDK ignores a cancel for an id it does not know, and the
 * request then ran to its end. A few such early cancels are remembered per
 * session, and a request that arrives already cancelled is not run.
 *
 * `onCancelled` hears each request whose stream is closed this way, just before
 * (mcp-legacy.ts marks the stream ended in the session's event store, so a
 * resume of it ends instead of waiting for a response that will not come).
 */
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { isJSONRPCErrorResponse, isJSONRPCNotification, isJSONRPCRequest, isJSONRPCResultResponse, type JSONRPCMessage, type RequestId } from '@modelcontextprotocol/sdk/types.js';

/** Cancels for requests not (yet) seen that a session remembers; the oldest is forgotten first. */
export const EARLY_CANCELS_KEPT = 64;

/**
 * Make `transport` close the stream of every request cancelled by its client.
 * Call it after the MCP server is connected (the server sets `onmessage`).
 */
export function closeCancelledStreams(transport: Transport & { closeSSEStream(requestId: RequestId): void }, keep = EARLY_CANCELS_KEPT, onCancelled?: (requestId: RequestId) => void): void {
  const receive = transport.onmessage;
  if (!receive) throw new Error('closeCancelledStreams: connect the MCP server to the transport first');
  /** Requests handed to the server and not answered yet. */
  const open = new Set<RequestId>();
  /** Cancels that named no open request, oldest first (a Set keeps insertion order). */
  const early = new Set<RequestId>();
  const close = (id: RequestId): void => {
    // After the server has seen the cancel (it aborts the handler, which then sends nothing for it).
    queueMicrotask(() => {
      onCancelled?.(id);
      transport.closeSSEStream(id);
    });
  };

  transport.onmessage = (message, extra) => {
    const id = cancelledRequestId(message);
    if (id !== undefined) {
      if (open.delete(id)) close(id);
      else {
        early.add(id);
        if (early.size > keep) early.delete(early.values().next().value as RequestId);
      }
    } else if (isJSONRPCRequest(message)) {
      if (early.delete(message.id)) {
        // Cancelled before it arrived: never run, and (being cancelled) never answered.
        close(message.id);
        return;
      }
      open.add(message.id);
    }
    receive.call(transport, message, extra);
  };

  const send = transport.send.bind(transport);
  transport.send = (message: JSONRPCMessage, options) => {
    if (isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message)) {
      if (message.id !== undefined) open.delete(message.id);
    }
    return send(message, options);
  };
}

function cancelledRequestId(message: JSONRPCMessage): RequestId | undefined {
  if (!isJSONRPCNotification(message) || message.method !== 'notifications/cancelled') return undefined;
  const requestId = (message.params as { requestId?: unknown } | undefined)?.requestId;
  return typeof requestId === 'string' || typeof requestId === 'number' ? requestId : undefined;
}
