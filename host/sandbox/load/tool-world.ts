/**
 * Which version of the tool world a component targets, told by the tool
 * interface it exports: `toolhost:tool/tool@0.1.0` (wit/tool.wit),
 * `toolhost:tool/tool@0.2.0` (wit/v0.2/tool.wit) or `toolhost:tool/tool@0.3.0`
 * (wit/v0.3/tool.wit). All import the host interface under the same
 * unversioned name in jco's instantiation glue, and the host offers the
 * newest functions to all (an older component never calls them). What
 * differs is what `describe` and `call` return (0.3.0's are 0.2.0's); this
 * module turns them into the same plain data (GuestToolInfo,
 * GuestCallOutput), in the worker.
 *
 * It guarantees: a component exporting several versions is served as the newest; the
 * shapes are checked only as far as jco's glue lifts them (the glue checks
 * the canonical ABI). It does not check what the content says (URIs, MIME types).
 */
import type { GuestContent, GuestToolInfo } from '../protocol.js';
import { SURFACE_GUEST_NAME, SurfaceExports } from './surface-exports.js';

/** The tool interfaces, newest first. */
export const TOOL_EXPORTS = {
  '0.3.0': 'toolhost:tool/tool@0.3.0',
  '0.2.0': 'toolhost:tool/tool@0.2.0',
  '0.1.0': 'toolhost:tool/tool@0.1.0',
} as const;

export type ToolWorld = keyof typeof TOOL_EXPORTS;

/** The world whose tool interface is among `exports` (interface names as jco lists them), newest first. */
export function worldOfExports(exports: readonly string[]): ToolWorld | undefined {
  for (const [world, name] of Object.entries(TOOL_EXPORTS) as Array<[ToolWorld, string]>) {
    if (exports.includes(name)) return world;
  }
  return undefined;
}

/** What a call returned, as plain data: the JSON value (text) and/or content items (0.2.0 only). */
export interface GuestCallOutput {
  /** The value's JSON text; undefined when a 0.2.0 tool returned content items only. */
  value?: string;
  content?: GuestContent[];
}

/** A tool interface of either world, as the glue exports it. */
interface ToolInterface {
  describe(): unknown[];
  call(name: string, args: string): unknown;
}

/** One tool interface of a component instance, whichever world it targets. */
export class ToolExports {
  readonly world: ToolWorld;
  readonly #tool: ToolInterface;
  /** The optional prompts and resources interfaces (0.2.0 and later), reached by the reserved call name (surface-exports.ts). */
  #surface: SurfaceExports | undefined;

  private constructor(world: ToolWorld, tool: ToolInterface, exports?: Record<string, unknown>) {
    this.world = world;
    this.#tool = tool;
    if (world !== '0.1.0' && exports !== undefined) this.#surface = new SurfaceExports(exports);
  }

  /** The tool interface of a component's exports (jco's instantiation result), or undefined. */
  static of(exports: Record<string, unknown>): ToolExports | undefined {
    for (const [world, name] of Object.entries(TOOL_EXPORTS) as Array<[ToolWorld, string]>) {
      const tool = exports[name] as ToolInterface | undefined;
      if (tool && typeof tool.call === 'function' && typeof tool.describe === 'function') return new ToolExports(world, tool, exports);
    }
    // Older glue keyed the export by its plain name.
    const plain = exports.tool as ToolInterface | undefined;
    if (plain && typeof plain.call === 'function' && typeof plain.describe === 'function') return new ToolExports('0.1.0', plain);
    return undefined;
  }

  describe(): GuestToolInfo[] {
    const infos = this.#tool.describe() as GuestToolInfo[];
    if (this.world === '0.1.0') return infos;
    return (infos as unknown as Array<Omit<GuestToolInfo, keyof RawMetadata> & RawMetadata>).map(describedV2);
  }

  /** Run a call; throws whatever the guest or the glue threw (a tool-error is thrown by the glue as a ComponentError). */
  call(name: string, args: string): GuestCallOutput {
    if (name === SURFACE_GUEST_NAME && this.#surface !== undefined) return { value: this.#surface.run(args, contentOf as (raw: never) => GuestContent) };
    const output = this.#tool.call(name, args);
    if (this.world === '0.1.0') return { value: output as string };
    const { value, content } = output as { value?: string; content: RawContent[] };
    const result: GuestCallOutput = {};
    if (value !== undefined) result.value = value;
    if (content.length > 0) result.content = content.map(contentOf);
    return result;
  }
}

/** The metadata fields of a 0.2.0 tool-info, as the glue lifts them. */
interface RawMetadata {
  title?: string;
  annotations: { readOnlyHint?: boolean; destructiveHint?: boolean; idempotentHint?: boolean; openWorldHint?: boolean };
  icons: Array<{ src: string; mimeType?: string; sizes: string[] }>;
}

function describedV2(info: Omit<GuestToolInfo, keyof RawMetadata> & RawMetadata): GuestToolInfo {
  const { title, annotations, icons, ...base } = info;
  const described: GuestToolInfo = { ...base };
  if (title !== undefined) described.title = title;
  const hints = Object.fromEntries(Object.entries(annotations).filter(([, value]) => value !== undefined));
  if (Object.keys(hints).length > 0) described.annotations = hints;
  if (icons.length > 0) {
    described.icons = icons.map((icon) => ({
      src: icon.src,
      ...(icon.mimeType === undefined ? {} : { mimeType: icon.mimeType }),
      ...(icon.sizes.length === 0 ? {} : { sizes: [...icon.sizes] }),
    }));
  }
  return described;
}

type RawMedia = { data: Uint8Array; mimeType: string };
type RawContent =
  | { tag: 'text'; val: string }
  | { tag: 'image' | 'audio'; val: RawMedia }
  | { tag: 'resource-link'; val: { uri: string; name: string; title?: string; description?: string; mimeType?: string } }
  | { tag: 'resource'; val: { uri: string; mimeType?: string; body: { tag: 'text'; val: string } | { tag: 'blob'; val: Uint8Array } } };

function contentOf(raw: RawContent): GuestContent {
  switch (raw.tag) {
    case 'text':
      return { type: 'text', text: raw.val };
    case 'image':
    case 'audio':
      // A copy: the glue's view may point into guest memory.
      return { type: raw.tag, data: Uint8Array.from(raw.val.data), mimeType: raw.val.mimeType };
    case 'resource-link': {
      const { uri, name, title, description, mimeType } = raw.val;
      return { type: 'resource_link', uri, name, ...(title === undefined ? {} : { title }), ...(description === undefined ? {} : { description }), ...(mimeType === undefined ? {} : { mimeType }) };
    }
    case 'resource': {
      const { uri, mimeType, body } = raw.val;
      const resource = body.tag === 'text' ? { uri, text: body.val } : { uri, blob: Uint8Array.from(body.val) };
      return { type: 'resource', resource: mimeType === undefined ? resource : { ...resource, mimeType } };
    }
  }
}

/** Bytes a content item costs against the result's limit (its payload, plus a fixed 64 for the item). */
export function contentBytes(item: GuestContent): number {
  const text = (value: string | undefined): number => (value === undefined ? 0 : Buffer.byteLength(value));
  switch (item.type) {
    case 'text':
      return 64 + text(item.text);
    case 'image':
    case 'audio':
      return 64 + item.data.byteLength + text(item.mimeType);
    case 'resource_link':
      return 64 + text(item.uri) + text(item.name) + text(item.title) + text(item.description) + text(item.mimeType);
    case 'resource':
      return 64 + text(item.resource.uri) + text(item.resource.mimeType) + ('text' in item.resource ? text(item.resource.text) : item.resource.blob.byteLength);
  }
}

