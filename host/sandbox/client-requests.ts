/**
 * The main thread's side of a 0.2.0 guest's `sample` and `elicit`: the
 * guest's shapes (bytes, WIT variants) to the call's `ctx.client` (MCP
 * shapes, base64) and back, and every refusal as the `tool-error` the guest
 * gets (`code` is a toolhost error code). The decisions (grant, caps, sizes,
 * audit) are the call path's (core/call/client-gate.ts); this file only translates.
 *
 * Guarantees: the answer is always data the worker can hand the glue (never a
 * rejected promise for a refusal), so the guest sees an error result, not a trap.
 */
import { ToolhostError } from '../base/errors.js';
import type { ToolContext } from '../core/context.js';
import type { ElicitRequest, SamplingContent, SamplingRequest } from '../core/client-requests.js';
import type { GuestElicitAnswer, GuestSampleAnswer, GuestSamplingContent, GuestSamplingRequest } from './protocol.js';

type GuestFailure = { ok: false; error: { code: string; message: string; details?: string } };

function failure(error: unknown): GuestFailure {
  if (error instanceof ToolhostError) {
    const out: GuestFailure = { ok: false, error: { code: error.code, message: error.message } };
    if (error.details !== undefined) out.error.details = JSON.stringify(error.details);
    return out;
  }
  return { ok: false, error: { code: 'INTERNAL', message: (error as Error)?.message ?? String(error) } };
}

function toMcpContent(content: GuestSamplingContent): SamplingContent {
  if (content.tag === 'text') return { type: 'text', text: content.val };
  return { type: content.tag, data: Buffer.from(content.val.data).toString('base64'), mimeType: content.val.mimeType };
}

function toGuestContent(content: SamplingContent): GuestSamplingContent {
  switch (content.type) {
    case 'text':
      return { tag: 'text', val: content.text };
    case 'image':
    case 'audio':
      return { tag: content.type, val: { data: new Uint8Array(Buffer.from(content.data, 'base64')), mimeType: content.mimeType } };
    default:
      throw new ToolhostError('TOOL_ERROR', `the client answered with content of type ${JSON.stringify((content as { type?: unknown }).type)}, which the tool world cannot carry`);
  }
}

/** A guest's sampling request, sent through the call's gated client. */
export async function answerSample(ctx: ToolContext, guest: GuestSamplingRequest): Promise<GuestSampleAnswer> {
  try {
    const request: SamplingRequest = {
      messages: guest.messages.map((message) => ({ role: message.role, content: toMcpContent(message.content) })),
      maxTokens: guest.maxTokens,
    };
    if (guest.systemPrompt !== undefined) request.systemPrompt = guest.systemPrompt;
    if (guest.temperature !== undefined) request.temperature = guest.temperature;
    if (guest.stopSequences.length > 0) request.stopSequences = [...guest.stopSequences];
    const preferences = guest.modelPreferences;
    if (preferences !== undefined) {
      request.modelPreferences = {
        ...(preferences.hints.length === 0 ? {} : { hints: preferences.hints.map((name) => ({ name })) }),
        ...(preferences.costPriority === undefined ? {} : { costPriority: preferences.costPriority }),
        ...(preferences.speedPriority === undefined ? {} : { speedPriority: preferences.speedPriority }),
        ...(preferences.intelligencePriority === undefined ? {} : { intelligencePriority: preferences.intelligencePriority }),
      };
    }
    const result = await ctx.client.sample(request);
    const value: Extract<GuestSampleAnswer, { ok: true }>['value'] = { role: result.role, content: toGuestContent(result.content), model: String(result.model) };
    if (typeof result.stopReason === 'string') value.stopReason = result.stopReason;
    return { ok: true, value };
  } catch (error) {
    return failure(error);
  }
}

/** A guest's elicitation request (its schema as JSON text), sent through the call's gated client. */
export async function answerElicit(ctx: ToolContext, message: string, requestedSchema: string): Promise<GuestElicitAnswer> {
  try {
    let schema: unknown;
    try {
      schema = JSON.parse(requestedSchema);
    } catch {
      schema = undefined;
    }
    const record = schema as { type?: unknown; properties?: unknown } | undefined;
    if (typeof record !== 'object' || record === null || record.type !== 'object' || typeof record.properties !== 'object' || record.properties === null || Array.isArray(record.properties)) {
      throw new ToolhostError('INVALID_INPUT', 'requested-schema must be a JSON Schema object with type "object" and properties');
    }
    const result = await ctx.client.elicit({ message, requestedSchema: record as ElicitRequest['requestedSchema'] });
    const value: Extract<GuestElicitAnswer, { ok: true }>['value'] = { action: result.action };
    if (result.action === 'accept' && result.content !== undefined) value.content = JSON.stringify(result.content);
    return { ok: true, value };
  } catch (error) {
    return failure(error);
  }
}
