/**
 * ToolEvent → ToolFrame.
 *
 * Every frame carries the event in `data` and a small JSON `summary`:
 *
 * | event    | data (content_type)                                                   | summary |
 * |----------|-----------------------------------------------------------------------|---------|
 * | start    | `{"type":"start","tool_id","call_id","metadata"}` (application/json)   | `{"type":"start"}` |
 * | progress | `{"type":"progress","pct"?,"message"?}` (application/json)             | `{"type":"progress"}` |
 * | delta    | `{"type":"delta","data"}` (application/json)                           | `{"type":"delta"}` |
 * | log      | `{"type":"log","level","message","source"}` (application/json)         | `{"type":"log"}` |
 * | result   | the tool's structured JSON (application/json); a result with only text blocks: the text (text/plain; charset=utf-8); other content blocks without structured JSON: `{"content":[...]}` (application/json) | `{"type":"result","status":"ok","accounting"}` |
 * | error    | `{"type":"error","code","message","details"?}` (application/json)      | `{"type":"error","status":"error" or "cancelled","accounting","error":{code,message,details},"partial"}` |
 *
 * The terminal event's frame is the only one with `final: true`. `partial` on a
 * failed call's frame says whether the tool had already emitted deltas (for a
 * cancelled call, the call path's own `details.partial`). Accounting keeps the
 * library's field names (wallMs, cpuMs, queuedMs, ...).
 */
import type { TerminalEvent, ToolEvent } from '../../core/events.js';
import type { ToolResult } from '../../core/result.js';
import type { ToolFrameMessage } from './proto.js';

export const JSON_CONTENT_TYPE = 'application/json';
export const TEXT_CONTENT_TYPE = 'text/plain; charset=utf-8';

/** Numbers the frames of one call and turns its events into them. */
export class FrameBuilder {
  readonly callId: string;
  #next = 0;
  #deltas = 0;

  constructor(callId: string) {
    this.callId = callId;
  }

  /** Frames built so far. */
  get count(): number {
    return this.#next;
  }

  /** The next frame of a stream: frame_no counts from 0, `final` on the terminal event's frame. */
  next(event: ToolEvent): ToolFrameMessage {
    if (event.type === 'delta') this.#deltas += 1;
    const frameNo = this.#next;
    this.#next += 1;
    return toFrame(this.callId, frameNo, event, this.#deltas > 0);
  }

  /** The one frame a unary Call answers: the terminal event's, frame_no 0. */
  unary(terminal: TerminalEvent, deltasSeen: number): ToolFrameMessage {
    return toFrame(this.callId, 0, terminal, deltasSeen > 0);
  }
}

/** One event as a frame. `sawDeltas` feeds `partial` on a failed call's final frame. */
export function toFrame(callId: string, frameNo: number, event: ToolEvent, sawDeltas: boolean): ToolFrameMessage {
  const final = event.type === 'result' || event.type === 'error';
  const { contentType, data } = frameData(event);
  return {
    call_id: callId,
    frame_no: frameNo,
    final,
    content_type: contentType,
    data,
    summary: json(frameSummary(event, sawDeltas)),
  };
}

function frameData(event: ToolEvent): { contentType: string; data: Buffer } {
  switch (event.type) {
    case 'start':
      return asJson({ type: 'start', tool_id: event.toolId, call_id: event.callId, metadata: event.metadata });
    case 'progress':
      return asJson({ type: 'progress', ...(event.pct === undefined ? {} : { pct: event.pct }), ...(event.message === undefined ? {} : { message: event.message }) });
    case 'delta':
      return asJson({ type: 'delta', data: event.data ?? null });
    case 'log':
      return asJson({ type: 'log', level: event.level, message: event.message, source: event.source });
    case 'result':
      return resultData(event.result);
    case 'error':
      return asJson({ type: 'error', code: event.code, message: event.message, ...(event.details === undefined ? {} : { details: event.details }) });
  }
}

/** The result's structured JSON, else its text, else its content blocks as JSON. */
export function resultData(result: ToolResult): { contentType: string; data: Buffer } {
  if (result.structuredContent !== undefined) return asJson(result.structuredContent);
  const blocks = result.content;
  if (blocks.length > 0 && blocks.every((block) => block.type === 'text')) {
    return { contentType: TEXT_CONTENT_TYPE, data: Buffer.from(blocks.map((block) => (block.type === 'text' ? block.text : '')).join('\n'), 'utf8') };
  }
  return asJson({ content: blocks });
}

/** The summary of a frame: its type, and on the final frame the outcome and accounting. */
export function frameSummary(event: ToolEvent, sawDeltas: boolean): Record<string, unknown> {
  if (event.type === 'result') return { type: 'result', status: 'ok', accounting: event.accounting };
  if (event.type !== 'error') return { type: event.type };
  const cancelled = event.code === 'CANCELLED';
  const detailsPartial = (event.details as { partial?: unknown } | undefined)?.partial;
  return {
    type: 'error',
    status: cancelled ? 'cancelled' : 'error',
    accounting: event.accounting,
    error: { code: event.code, message: event.message, ...(event.details === undefined ? {} : { details: event.details }) },
    partial: typeof detailsPartial === 'boolean' ? detailsPartial : sawDeltas,
  };
}

function asJson(value: unknown): { contentType: string; data: Buffer } {
  return { contentType: JSON_CONTENT_TYPE, data: json(value) };
}

function json(value: unknown): Buffer {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (error) {
    text = JSON.stringify({ unserializable: error instanceof Error ? error.message : String(error) });
  }
  return Buffer.from(text ?? 'null', 'utf8');
}
