/**
 * A received ToolCall → the registry's (name, args, CallOptions).
 *
 * - `args` is JSON text when `content_type` is `application/json` (parameters
 *   such as `; charset=utf-8` allowed) or empty; empty args mean `{}`. Any other
 *   content type, or args that are not JSON, is INVALID_INPUT.
 * - `call_id` is the client's when it sends one (the call path refuses an id
 *   already in flight), otherwise a fresh UUID. A client's id must follow the
 *   call-id rules (1..128 visible ASCII characters, see core/call/ids.ts):
 *   otherwise INVALID_ARGUMENT, and the id is not echoed back.
 * - `args` must be valid UTF-8 (INVALID_INPUT otherwise: never replaced).
 * - `policy` maps through `toPolicyInput`.
 * - `provider_id` is accepted and ignored (logged at debug); `stream` is
 *   informational (the RPC decides whether frames stream).
 * - Request metadata may carry what the proto has no field for:
 *   `toolhost-conversation-id`, `toolhost-session-id`, `toolhost-agent-name`.
 */
import { randomUUID } from 'node:crypto';
import type { Metadata } from '@grpc/grpc-js';
import type { CallOptions } from '../../core/call/options.js';
import { callIdProblem } from '../../core/call/ids.js';
import { ToolhostError } from '../../base/errors.js';
import { toPolicyInput } from './policy.js';
import type { ToolCallMessage } from './proto.js';

const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

export const CONVERSATION_ID_METADATA_KEY = 'toolhost-conversation-id';
export const SESSION_ID_METADATA_KEY = 'toolhost-session-id';
export const AGENT_NAME_METADATA_KEY = 'toolhost-agent-name';

/** What the registry needs to start the call. */
export interface ParsedToolCall {
  callId: string;
  toolName: string;
  args: unknown;
  options: CallOptions & { callId: string };
  providerId: string | undefined;
}

/** The call id a request names, or a fresh one (known before anything is parsed, so errors can carry it). */
export function requestCallId(request: ToolCallMessage): string {
  const id = request.call_id;
  return typeof id === 'string' && id.length > 0 ? id : randomUUID();
}

/** Why the call id a request names is unusable (undefined: usable, or none named). */
export function requestCallIdProblem(request: ToolCallMessage, maxLength?: number): string | undefined {
  const id = request.call_id;
  if (typeof id !== 'string' || id.length === 0) return undefined;
  return callIdProblem(id, maxLength);
}

/** Parse a ToolCall; throws a ToolhostError (INVALID_INPUT) for a malformed one. */
export function parseToolCall(request: ToolCallMessage, metadata: Metadata, callId: string, worktree?: (toolName: string) => string | undefined): ParsedToolCall {
  const toolName = typeof request.tool_name === 'string' ? request.tool_name : '';
  if (toolName.length === 0) throw new ToolhostError('INVALID_INPUT', 'tool_name is required', { callId });
  const args = parseArgs(request.content_type ?? '', request.args ?? undefined, callId);
  const options: ParsedToolCall['options'] = { callId };
  const policy = toPolicyInput(request.policy);
  if (policy !== undefined) options.policy = policy;
  const conversationId = metadataString(metadata, CONVERSATION_ID_METADATA_KEY);
  if (conversationId !== undefined) options.conversationId = conversationId;
  const sessionId = metadataString(metadata, SESSION_ID_METADATA_KEY);
  if (sessionId !== undefined) options.sessionId = sessionId;
  const agentName = metadataString(metadata, AGENT_NAME_METADATA_KEY);
  if (agentName !== undefined) options.agentName = agentName;
  const bound = worktree?.(toolName);
  if (bound !== undefined) options.workingDir = bound;
  const providerId = typeof request.provider_id === 'string' && request.provider_id.length > 0 ? request.provider_id : undefined;
  return { callId, toolName, args, options, providerId };
}

/** Decode `args` by its content type. */
export function parseArgs(contentType: string, args: Uint8Array | undefined, callId?: string): unknown {
  const mediaType = (contentType.split(';')[0] ?? '').trim().toLowerCase();
  if (mediaType !== '' && mediaType !== 'application/json') {
    throw new ToolhostError('INVALID_INPUT', `content_type "${contentType}" is not supported; send args as JSON with content_type "application/json" (or empty)`, {
      ...(callId === undefined ? {} : { callId }),
      details: { contentType, supported: ['application/json'] },
    });
  }
  if (args === undefined || args.length === 0) return {};
  let text: string;
  try {
    text = STRICT_UTF8.decode(args);
  } catch {
    // Replacing bad bytes would hand the tool (and its sha256) other bytes than were sent.
    throw new ToolhostError('INVALID_INPUT', 'args are not valid UTF-8: JSON text must be UTF-8', { ...(callId === undefined ? {} : { callId }), details: { reason: 'utf8' } });
  }
  if (text.trim() === '') return {};
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new ToolhostError('INVALID_INPUT', `args are not valid JSON: ${error instanceof Error ? error.message : String(error)}`, {
      ...(callId === undefined ? {} : { callId }),
    });
  }
}

function metadataString(metadata: Metadata, key: string): string | undefined {
  const value = metadata.get(key)[0];
  return typeof value === 'string' && value.length > 0 ? value : undefined;
}
