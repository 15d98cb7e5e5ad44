/**
 * Components' prompts and resources (the optional `prompts` and `resources`
 * exports of `toolhost:tool@0.2.0`), as the registry serves them: one entry
 * per loaded component that offers either, each run through the one call path
 * (admission under the component's grant, budgets, audit, limits) as a call of
 * its reserved surface tool (`surface:COMPONENT`, never a registered tool).
 *
 * - Listings (prompts, resources, templates) are asked once per component and
 *   kept until it is unloaded or loaded again; a failed listing is not kept.
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
import type { CallOptions } from './call/options.js';
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

/** Runs one surface operation as a call of the surface tool (the registry's call path). */
export type SurfaceCall = (tool: Tool, args: Record<string, unknown>, options: CallOptions) => Promise<TerminalEvent>;

interface Entry extends ComponentSurface {
  listings: Map<string, Promise<unknown[]>>;
}

export class ComponentSurfaces {
  readonly #entries = new Map<string, Entry>();
  readonly #run: SurfaceCall;
  readonly #maxItems: number;
  readonly #onLimit: (tool: string, limit: string) => void;
  readonly #listeners = new Set<(kinds: { prompts: boolean; resources: boolean }) => void>();

  constructor(run: SurfaceCall, options: { maxItems?: number; onLimit: (tool: string, limit: string) => void }) {
    this.#run = run;
    this.#maxItems = options.maxItems ?? DEFAULT_SURFACE_ITEMS;
    if (!Number.isInteger(this.#maxItems) || this.#maxItems < 1) throw new TypeError('options.surfaceItems must be a positive integer');
    this.#onLimit = options.onLimit;
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
    this.#entries.set(surface.component, { ...surface, listings: new Map() });
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
    for (const entry of this.#entries.values()) {
      if (!entry.prompts) continue;
      for (const prompt of (await this.#listing(entry, 'prompts/list', options)) as PromptInfo[]) {
        const name = taken.has(prompt.name) ? `${entry.component}.${prompt.name}` : prompt.name;
        if (taken.has(name)) continue;
        taken.add(name);
        out.push({ ...prompt, name, component: entry.component, guestName: prompt.name });
      }
    }
    return out;
  }

  async getPrompt(name: string, args: Record<string, string>, options: CallOptions = {}): Promise<PromptResult> {
    const prompt = (await this.listPrompts(options)).find((candidate) => candidate.name === name);
    if (!prompt) throw new ToolhostError('INVALID_INPUT', `no prompt named "${name}"`, { details: { reason: 'unknown-prompt', prompt: name } });
    for (const argument of prompt.arguments ?? []) {
      if (argument.required === true && args[argument.name] === undefined) throw new ToolhostError('INVALID_INPUT', `prompt "${name}" needs the argument "${argument.name}"`, { details: { reason: 'missing-argument', argument: argument.name } });
    }
    return (await this.#call(this.#entries.get(prompt.component)!, { op: 'prompts/get', name: prompt.guestName, arguments: args }, options)) as PromptResult;
  }

  /** Every component's resources; a URI an earlier component listed is left out. */
  async listResources(options: CallOptions = {}): Promise<Array<ResourceInfo & { component: string }>> {
    return this.#unique<ResourceInfo>('resources/list', (item) => item.uri, options);
  }

  async listTemplates(options: CallOptions = {}): Promise<Array<ResourceTemplateInfo & { component: string }>> {
    return this.#unique<ResourceTemplateInfo>('resources/templates', (item) => item.uriTemplate, options);
  }

  /** Read a resource from the component that lists it, or whose template `matches` it. */
  async readResource(uri: string, matches: (template: string, uri: string) => boolean, options: CallOptions = {}): Promise<ResourceContents> {
    const owner = (await this.listResources(options)).find((resource) => resource.uri === uri)?.component
      ?? (await this.listTemplates(options)).find((template) => matches(template.uriTemplate, uri))?.component;
    if (owner === undefined) throw new ToolhostError('INVALID_INPUT', `no component offers the resource "${uri}"`, { details: { reason: 'unknown-resource', uri } });
    return (await this.#call(this.#entries.get(owner)!, { op: 'resources/read', uri }, options)) as ResourceContents;
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
    for (const entry of this.#entries.values()) {
      if (!entry.resources) continue;
      for (const item of (await this.#listing(entry, op, options)) as T[]) {
        if (seen.has(key(item))) continue;
        seen.add(key(item));
        out.push({ ...item, component: entry.component });
      }
    }
    return out;
  }

  /** A component's listing, asked once (a failure is not kept), within `maxItems`. */
  #listing(entry: Entry, op: 'prompts/list' | 'resources/list' | 'resources/templates', options: CallOptions): Promise<unknown[]> {
    let pending = entry.listings.get(op);
    if (!pending) {
      pending = this.#call(entry, { op }, options).then((answer) => {
        const items = Array.isArray(answer) ? answer : [];
        if (items.length > this.#maxItems) {
          this.#onLimit(entry.tool.name, 'surface_items');
          throw new ToolhostError('OUTPUT_LIMIT_EXCEEDED', `component "${entry.component}" lists ${items.length} items for ${op}, over the limit of ${this.#maxItems} (host.guest_limits.surface_items)`, {
            details: { reason: 'surface-items', limit: 'surface_items', max: this.#maxItems, count: items.length },
          });
        }
        return items;
      });
      entry.listings.set(op, pending);
      pending.catch(() => {
        if (entry.listings.get(op) === pending) entry.listings.delete(op);
      });
    }
    return pending;
  }

  async #call(entry: Entry, args: Record<string, unknown>, options: CallOptions): Promise<unknown> {
    const terminal = await this.#run(entry.tool, args, options);
    if (terminal.type === 'error') throw ToolhostError.fromData({ code: terminal.code, message: terminal.message, details: terminal.details, callId: terminal.callId });
    return terminal.result.structuredContent ?? JSON.parse(textOf(terminal.result.content));
  }
}

function textOf(content: ReadonlyArray<{ type: string; text?: string }>): string {
  const text = content.find((block) => block.type === 'text')?.text;
  return text ?? 'null';
}
