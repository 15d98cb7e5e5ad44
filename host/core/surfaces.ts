/**
 * Components' prompts and resources (the optional `prompts` and `resources`
 * exports of `toolhost:tool@0.2.0`), as the registry serves them: one entry
 * per loaded component that offers either, each run through the one call path
 * (admission under the component's grant, budgets, audit, limits) as a call of
 * its reserved surface tool (`surface:COMPONENT`, never a registered tool).
 *
 * - Listings (prompts, resources, templates) are asked once per component and
 *   kept until it is unloaded or loaded again, each component's apart
 *   (core/surface-listings.ts): a component whose listing fails or is slow is
 *   left out of the answer (logged, counted, backed off), never failing the
 *   others.
 * - Resource templates are matched by core/uri-template-match.ts (no
 *   backtracking; compiled when listed, a template past its caps is left out
 *   and counted as `uri_template`); a URI longer than its cap is INVALID_INPUT
 *   before any matching, and each component's templates get at most
 *   `TEMPLATE_MATCH_CELLS` table cells per read (past them its remaining
 *   templates are not tried: counted as `uri_template_cells`).
 * - Names: a prompt keeps its name unless an earlier component took it, then
 *   it is `COMPONENT.NAME` (as tools are); a resource URI or a template
 *   already listed by an earlier component is left out.
 * - Limits: a component may list at most `maxItems` prompts, resources and
 *   templates each (`guest_limits.surface_items`); past it the listing fails
 *   with OUTPUT_LIMIT_EXCEEDED and counts as a limit hit. Completions are cut
 *   to MCP's 100 values (`hasMore`). Answers are bounded in bytes by the
 *   result limit of every call (`max_result_bytes`).
 * - Listeners hear when the set of components with prompts or resources changes.
 */
import { ToolhostError } from '../base/errors.js';
import { createDefaultLogger, type Logger } from '../base/logger.js';
import type { CallOptions, CallStream } from './call/options.js';
import { ComponentListings, DEFAULT_SURFACE_LISTING_WAIT_MS, type ListingOp } from './surface-listings.js';
import { compileUriTemplate, isRefusal, matchUriTemplate, URI_TEMPLATE_LIMITS, type CompiledUriTemplate, type MatchBudget } from './uri-template-match.js';
import type { TerminalEvent } from './events.js';
import type { JsonSchema, Tool } from './tool.js';

/** The surface tool's name prefix (`surface:COMPONENT`): never a tool name (tool names have no `:`). */
export const SURFACE_TOOL_PREFIX = 'surface:';
/** What a surface call takes: `{ op, ... }` (sandbox/load/surface-exports.ts). */
export const SURFACE_INPUT_SCHEMA: JsonSchema = { type: 'object', required: ['op'], properties: { op: { type: 'string' } } };
/** Prompts, resources and templates a component may list (each), unless configured. */
export const DEFAULT_SURFACE_ITEMS = 1000;
/** Values a completion answers with at most (MCP's cap). */
export const MAX_COMPLETION_VALUES = 100;
/**
 * Table cells (template parts + 1) x (URI length + 1) one component's templates may fill in one read
 * (core/uri-template-match.ts): ~10-20 ms of the main thread at most on a loaded 2-vCPU VM; an honest
 * template against an ordinary URI fills a few hundred, and one whose leading or trailing literal does not
 * fit fills none.
 */
export const TEMPLATE_MATCH_CELLS = 1 << 20;

export interface PromptArgument { name: string; description?: string; required?: boolean }
export interface PromptInfo { name: string; title?: string; description?: string; arguments?: PromptArgument[] }
export interface ResourceInfo { uri: string; name: string; title?: string; description?: string; mimeType?: string }
export interface ResourceTemplateInfo { uriTemplate: string; name: string; title?: string; description?: string; mimeType?: string }
export interface PromptResult { description?: string; messages: Array<{ role: 'user' | 'assistant'; content: Record<string, unknown> }> }
export type ResourceContents = Array<{ uri: string; mimeType?: string; text?: string; blob?: string }>;
export interface Completion { values: string[]; total: number; hasMore: boolean }

/** A component's surface, as the loader hands it over. */
export interface ComponentSurface {
  component: string;
  tool: Tool;
  prompts: boolean;
  resources: boolean;
}

/** One surface operation's call: its events (the terminal last), and the terminal. */
export interface SurfaceStream extends CallStream {
  terminal(): Promise<TerminalEvent>;
}

/** Runs one surface operation as a call of the surface tool (the registry's call path). */
export type SurfaceCall = (tool: Tool, args: Record<string, unknown>, options: CallOptions) => SurfaceStream;

/**
 * A prompt found and its arguments checked, not yet run: `start` runs its `prompts/get` under the options given
 * (a server that may park the call while the guest asks its caller passes the client and signal it drives it with).
 */
export interface PromptRequest {
  start(options: CallOptions): SurfaceStream;
}

interface Entry extends ComponentSurface {
  listings: ComponentListings;
  /** Each listed template's matcher (keyed by the listed item). */
  matchers: WeakMap<object, CompiledUriTemplate>;
}

export class ComponentSurfaces {
  readonly #entries = new Map<string, Entry>();
  readonly #run: SurfaceCall;
  readonly #maxItems: number;
  readonly #onLimit: (tool: string, limit: string) => void;
  readonly #logger: Logger;
  readonly #waitMs: number;
  readonly #listeners = new Set<(kinds: { prompts: boolean; resources: boolean }) => void>();

  constructor(run: SurfaceCall, options: { maxItems?: number; listingWaitMs?: number; logger?: Logger; onLimit: (tool: string, limit: string) => void }) {
    this.#run = run;
    this.#maxItems = options.maxItems ?? DEFAULT_SURFACE_ITEMS;
    if (!Number.isInteger(this.#maxItems) || this.#maxItems < 1) throw new TypeError('options.surfaceItems must be a positive integer');
    this.#waitMs = options.listingWaitMs ?? DEFAULT_SURFACE_LISTING_WAIT_MS;
    if (!Number.isInteger(this.#waitMs) || this.#waitMs < 1) throw new TypeError('options.surfaceListingWaitMs must be a positive integer');
    this.#onLimit = options.onLimit;
    this.#logger = options.logger ?? createDefaultLogger();
  }

  /** Whether any loaded component offers prompts / resources. */
  get offers(): { prompts: boolean; resources: boolean } {
    const entries = [...this.#entries.values()];
    return { prompts: entries.some((entry) => entry.prompts), resources: entries.some((entry) => entry.resources) };
  }

  /** Hear when components with prompts or resources come or go (which kinds changed). */
  onChanged(listener: (kinds: { prompts: boolean; resources: boolean }) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** A component's surface, loaded (again): its listings are asked afresh. */
  set(surface: ComponentSurface): void {
    const previous = this.#entries.get(surface.component);
    const listings = new ComponentListings(surface.component, surface.tool.name, { waitMs: this.#waitMs, logger: this.#logger, onLimit: this.#onLimit });
    this.#entries.set(surface.component, { ...surface, listings, matchers: new WeakMap() });
    this.#changed({ prompts: surface.prompts || previous?.prompts === true, resources: surface.resources || previous?.resources === true });
  }

  /** Forget a component's surface (it was unloaded). */
  remove(component: string): void {
    const entry = this.#entries.get(component);
    if (!entry) return;
    this.#entries.delete(component);
    this.#changed({ prompts: entry.prompts, resources: entry.resources });
  }

  /**
   * Keep only the components whose surface tool (`surface:COMPONENT`, sandboxed, `source` the component)
   * `predicate` accepts: the registry's `retain` asks the same predicate about its tools and these.
   * Returns the components whose surface went.
   */
  retain(predicate: (tool: Tool) => boolean): string[] {
    const removed: string[] = [];
    const kinds = { prompts: false, resources: false };
    for (const [component, entry] of this.#entries) {
      if (predicate(entry.tool)) continue;
      this.#entries.delete(component);
      removed.push(component);
      kinds.prompts ||= entry.prompts;
      kinds.resources ||= entry.resources;
    }
    if (removed.length > 0) this.#changed(kinds);
    return removed;
  }

  #changed(kinds: { prompts: boolean; resources: boolean }): void {
    for (const listener of this.#listeners) {
      try { listener(kinds); } catch { /* a listener must not stop a load */ }
    }
  }

  /** Every component's prompts, under the names clients see. */
  async listPrompts(options: CallOptions = {}): Promise<Array<PromptInfo & { component: string; guestName: string }>> {
    const out: Array<PromptInfo & { component: string; guestName: string }> = [];
    const taken = new Set<string>();
    for (const [entry, listing] of await this.#listings('prompts/list', (entry) => entry.prompts, options)) {
      for (const prompt of listing as PromptInfo[]) {
        const name = taken.has(prompt.name) ? `${entry.component}.${prompt.name}` : prompt.name;
        if (taken.has(name)) continue;
        taken.add(name);
        out.push({ ...prompt, name, component: entry.component, guestName: prompt.name });
      }
    }
    return out;
  }

  async getPrompt(name: string, args: Record<string, string>, options: CallOptions = {}): Promise<PromptResult> {
    return promptResultOf(await (await this.prompt(name, args, options)).start(options).terminal());
  }

  /** The prompt `name` with `args`, checked (INVALID_INPUT: no such prompt, a required argument missing), to run. */
  async prompt(name: string, args: Record<string, string>, options: CallOptions = {}): Promise<PromptRequest> {
    const prompt = (await this.listPrompts(options)).find((candidate) => candidate.name === name);
    if (!prompt) throw new ToolhostError('INVALID_INPUT', `no prompt named "${name}"`, { details: { reason: 'unknown-prompt', prompt: name } });
    for (const argument of prompt.arguments ?? []) {
      if (argument.required === true && args[argument.name] === undefined) throw new ToolhostError('INVALID_INPUT', `prompt "${name}" needs the argument "${argument.name}"`, { details: { reason: 'missing-argument', argument: argument.name } });
    }
    const entry = this.#entries.get(prompt.component)!;
    const op = { op: 'prompts/get', name: prompt.guestName, arguments: args };
    return { start: (call) => this.#run(entry.tool, op, call) };
  }

  /** Every component's resources; a URI an earlier component listed is left out. */
  async listResources(options: CallOptions = {}): Promise<Array<ResourceInfo & { component: string }>> {
    return this.#unique<ResourceInfo>('resources/list', (item) => item.uri, options);
  }

  async listTemplates(options: CallOptions = {}): Promise<Array<ResourceTemplateInfo & { component: string }>> {
    return this.#unique<ResourceTemplateInfo>('resources/templates', (item) => item.uriTemplate, options);
  }

  /** Read a resource from the component that lists it, or whose template matches it. */
  async readResource(uri: string, options: CallOptions = {}): Promise<ResourceContents> {
    const owner = await this.ownerOf(uri, options);
    if (owner === undefined) throw new ToolhostError('INVALID_INPUT', `no component offers the resource "${shortUri(uri)}"`, { details: { reason: 'unknown-resource', uri: shortUri(uri) } });
    return (await this.#call(this.#entries.get(owner)!, { op: 'resources/read', uri }, options)) as ResourceContents;
  }

  /**
   * The component that offers `uri`: the first that lists it, else the first whose template matches it (each
   * component's templates within `TEMPLATE_MATCH_CELLS`). A URI over `URI_TEMPLATE_LIMITS.uriLength` is
   * INVALID_INPUT (`uri-too-long`), refused before any listing or matching.
   */
  async ownerOf(uri: string, options: CallOptions = {}): Promise<string | undefined> {
    if (uri.length > URI_TEMPLATE_LIMITS.uriLength) {
      throw new ToolhostError('INVALID_INPUT', `the resource URI has ${uri.length} characters, over the limit of ${URI_TEMPLATE_LIMITS.uriLength}`, {
        details: { reason: 'uri-too-long', max: URI_TEMPLATE_LIMITS.uriLength, length: uri.length },
      });
    }
    const listed = (await this.listResources(options)).find((resource) => resource.uri === uri)?.component;
    if (listed !== undefined) return listed;
    const budgets = new Map<string, MatchBudget>();
    for (const template of await this.listTemplates(options)) {
      const entry = this.#entries.get(template.component);
      const matcher = entry?.matchers.get(template);
      if (!entry || !matcher) continue;
      let budget = budgets.get(entry.component);
      if (!budget) budgets.set(entry.component, budget = { cells: TEMPLATE_MATCH_CELLS });
      if (budget.exceeded) continue;
      if (matchUriTemplate(matcher, uri, budget) !== null) return entry.component;
      if (budget.exceeded) {
        this.#onLimit(entry.tool.name, 'uri_template_cells');
        this.#logger.debug({ component: entry.component, cells: TEMPLATE_MATCH_CELLS }, 'surfaces: a component\'s templates were not all tried against a URI (match budget)');
      }
    }
    return undefined;
  }

  /** Values for a prompt's argument or a template's variable. */
  async complete(ref: { type: 'prompt'; name: string } | { type: 'resource'; uri: string }, argument: string, value: string, options: CallOptions = {}): Promise<Completion> {
    let values: unknown[];
    if (ref.type === 'prompt') {
      const prompt = (await this.listPrompts(options)).find((candidate) => candidate.name === ref.name);
      if (!prompt) throw new ToolhostError('INVALID_INPUT', `no prompt named "${ref.name}"`, { details: { reason: 'unknown-prompt', prompt: ref.name } });
      values = (await this.#call(this.#entries.get(prompt.component)!, { op: 'prompts/complete', prompt: prompt.guestName, argument, value }, options)) as unknown[];
    } else {
      const template = (await this.listTemplates(options)).find((candidate) => candidate.uriTemplate === ref.uri);
      if (!template) throw new ToolhostError('INVALID_INPUT', `no resource template "${ref.uri}"`, { details: { reason: 'unknown-template', uri: ref.uri } });
      values = (await this.#call(this.#entries.get(template.component)!, { op: 'resources/complete', template: ref.uri, variable: argument, value }, options)) as unknown[];
    }
    const strings = values.filter((entry): entry is string => typeof entry === 'string');
    return { values: strings.slice(0, MAX_COMPLETION_VALUES), total: strings.length, hasMore: strings.length > MAX_COMPLETION_VALUES };
  }

  async #unique<T extends object>(op: 'resources/list' | 'resources/templates', key: (item: T) => string, options: CallOptions): Promise<Array<T & { component: string }>> {
    const out: Array<T & { component: string }> = [];
    const seen = new Set<string>();
    for (const [entry, listing] of await this.#listings(op, (entry) => entry.resources, options)) {
      for (const item of listing as T[]) {
        if (seen.has(key(item))) continue;
        seen.add(key(item));
        const shown = { ...item, component: entry.component };
        const matcher = entry.matchers.get(item);
        if (matcher) entry.matchers.set(shown, matcher);
        out.push(shown);
      }
    }
    return out;
  }

  /** Every offering component's listing, asked at once; a component left out (failing, backing off, slow) is skipped. */
  async #listings(op: ListingOp, offers: (entry: Entry) => boolean, options: CallOptions): Promise<Array<[Entry, unknown[]]>> {
    const entries = [...this.#entries.values()].filter(offers);
    const listings = await Promise.all(entries.map((entry) => entry.listings.get(op, () => this.#listing(entry, op, options), options.signal)));
    const out: Array<[Entry, unknown[]]> = [];
    entries.forEach((entry, index) => {
      const listing = listings[index];
      if (listing !== undefined) out.push([entry, listing]);
    });
    return out;
  }

  /** Ask a component for a listing, within `maxItems`; templates are compiled, and those refused left out. */
  async #listing(entry: Entry, op: ListingOp, options: CallOptions): Promise<unknown[]> {
    const answer = await this.#call(entry, { op }, options);
    const items = Array.isArray(answer) ? answer : [];
    if (items.length > this.#maxItems) {
      this.#onLimit(entry.tool.name, 'surface_items');
      throw new ToolhostError('OUTPUT_LIMIT_EXCEEDED', `component "${entry.component}" lists ${items.length} items for ${op}, over the limit of ${this.#maxItems} (host.guest_limits.surface_items)`, {
        details: { reason: 'surface-items', limit: 'surface_items', max: this.#maxItems, count: items.length },
      });
    }
    if (op !== 'resources/templates') return items;
    const kept: unknown[] = [];
    for (const item of items as Array<Partial<ResourceTemplateInfo>>) {
      const compiled = compileUriTemplate(item?.uriTemplate);
      if (isRefusal(compiled)) {
        this.#onLimit(entry.tool.name, 'uri_template');
        this.#logger.warn({ component: entry.component, reason: compiled.reason, template: String(item?.uriTemplate).slice(0, 80) }, `surfaces: a resource template is left out: ${compiled.message}`);
        continue;
      }
      entry.matchers.set(item, compiled);
      kept.push(item);
    }
    return kept;
  }

  async #call(entry: Entry, args: Record<string, unknown>, options: CallOptions): Promise<unknown> {
    return surfaceValueOf(await this.#run(entry.tool, args, options).terminal());
  }
}

/** What a surface operation's call answered (its error thrown as a ToolhostError). */
function surfaceValueOf(terminal: TerminalEvent): unknown {
  if (terminal.type === 'error') throw ToolhostError.fromData({ code: terminal.code, message: terminal.message, details: terminal.details, callId: terminal.callId });
  return terminal.result.structuredContent ?? JSON.parse(textOf(terminal.result.content));
}

/** A `prompts/get` call's prompt, from its terminal (its error thrown as a ToolhostError). */
export function promptResultOf(terminal: TerminalEvent): PromptResult {
  return surfaceValueOf(terminal) as PromptResult;
}

/** A URI as an error quotes it: at most 200 characters. */
function shortUri(uri: string): string {
  return uri.length > 200 ? `${uri.slice(0, 200)}...` : uri;
}

function textOf(content: ReadonlyArray<{ type: string; text?: string }>): string {
  const text = content.find((block) => block.type === 'text')?.text;
  return text ?? 'null';
}
