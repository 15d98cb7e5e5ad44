/** What a call returns: content blocks for people and models, structured JSON for programs. */

/** A block of text. */
export interface TextContent {
  type: 'text';
  text: string;
}

/** An image, base64-encoded, with its media type (e.g. `image/png`). */
export interface ImageContent {
  type: 'image';
  data: string;
  mimeType: string;
}

/** Audio, base64-encoded, with its media type (e.g. `audio/wav`). */
export interface AudioContent {
  type: 'audio';
  data: string;
  mimeType: string;
}

/** A link to a resource the client may read (MCP `resource_link`). */
export interface ResourceLinkContent {
  type: 'resource_link';
  uri: string;
  name: string;
  title?: string;
  description?: string;
  mimeType?: string;
}

/** A resource's contents embedded in the result (MCP `resource`): text, or bytes as base64 in `blob`. */
export interface EmbeddedResourceContent {
  type: 'resource';
  resource: { uri: string; mimeType?: string; text: string } | { uri: string; mimeType?: string; blob: string };
}

export type ContentBlock = TextContent | ImageContent | AudioContent | ResourceLinkContent | EmbeddedResourceContent;

/** What a call measured about itself; present on every terminal event. */
export interface CallAccounting {
  /** Time from acceptance to the terminal event. */
  wallMs: number;
  /** Time spent waiting for a worker. */
  queuedMs: number;
  /** CPU time of the thread that ran the guest, when measured. */
  cpuMs?: number;
  /** How `cpuMs` was measured (`thread` on Linux; otherwise an approximation). */
  cpuClock?: 'thread' | 'process' | 'none';
  /** Linear memory the guest's instance held at the end of the call (its peak), in bytes. */
  peakMemoryBytes?: number;
  /**
   * Where the instance came from: created for the call, prepared while idle, reset to its snapshot after an
   * earlier call (as pristine as a prepared one), or kept from an earlier call.
   */
  instance?: 'fresh' | 'prewarmed' | 'restored' | 'reused';
  /** The tool's isolation mode. */
  isolation?: 'call' | 'conversation' | 'worker';
  /** Time spent creating the instance during the call (0 for prewarmed and reused instances). */
  instantiateMs?: number;
  /** The instance was made anew because the worker had dropped its component's instances (`host.pool.memory_budget_mb`, `idle_release_ms`). */
  reinstantiated?: boolean;
  /** Components whose instances the call's worker dropped for its memory budget or idleness since its previous answer. */
  evictions?: number;
  /** The worker thread that ran a sandboxed call. */
  workerThreadId?: number;
  /** Outgoing requests the network policy refused (the guest saw HTTP-request-denied): the first few only (see `networkDeniedCount`). */
  networkDenied?: Array<{ url: string; reason: string }>;
  /** How many outgoing requests the network policy refused in all (when more than `networkDenied` lists). */
  networkDeniedCount?: number;
  /** True when the call ended before any sandbox worker started it (every worker was busy the whole time). */
  waitingForWorker?: boolean;
  /** Attempts made (1 unless retried). */
  attempts: number;
  /** Non-terminal events emitted. */
  events: number;
}

/** What a runner may report about its call (RunnerSink.account); the call adds the rest. */
export type ReportedAccounting = Partial<Omit<CallAccounting, 'wallMs' | 'attempts' | 'events'>>;

/** The result of one call. `isError` is true when the call failed after it was accepted. */
export interface ToolResult {
  content: ContentBlock[];
  /** The tool's output as JSON, when it produced JSON. */
  structuredContent?: unknown;
  isError: boolean;
  /** The failure, when `isError` is true. */
  error?: import('../base/errors.js').ToolErrorData;
  accounting?: CallAccounting;
}

const kRichResult = Symbol.for('toolhost.richResult');

/** A native tool's return value that carries content blocks, not just JSON. */
export interface RichResult {
  readonly [kRichResult]: true;
  content: ContentBlock[];
  structuredContent?: unknown;
}

/**
 * Build a result with content blocks (text, images) for a native tool to return.
 * A plain value returned by a native tool becomes structured JSON plus a text block.
 */
export function richResult(content: ContentBlock[], structuredContent?: unknown): RichResult {
  const result: RichResult = { [kRichResult]: true, content };
  if (structuredContent !== undefined) result.structuredContent = structuredContent;
  return result;
}

export function isRichResult(value: unknown): value is RichResult {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[kRichResult] === true;
}

/** The successful result for a JSON value: the JSON as structured content and as text. */
export function jsonResult(value: unknown, text = JSON.stringify(value) ?? 'null'): ToolResult {
  return { content: [{ type: 'text', text }], structuredContent: value, isError: false };
}
