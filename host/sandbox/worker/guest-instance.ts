/**
 * One instance of a component in a worker, with the host imports bound to
 * whichever call is using it. Instances can be made before a call (a spare)
 * because the imports look up the current call when the guest calls them.
 */
import type { LogLevel } from '../../core/events.js';
import { LOG_LEVELS } from '../../core/events.js';
import type { GuestCapabilities, GuestCallContext, GuestToolInfo } from '../protocol.js';
import { createWasiImports, levelForStream, mountWorktree, type WorktreeMount } from '../wasi/capabilities.js';
import type { GuestHttpResult } from '../wasi/http.js';
import { handlesServe } from './handle-cap.js';
import { quoteGuest, QUOTED_GUEST_CHARS, type HostBridge } from './host-bridge.js';
import { MAX_STATE_KEY_BYTES } from '../../core/state.js';
import { InstanceSnapshot, type ResettableHost, type RestoreRefusal } from './instance-snapshot.js';
import { TOOL_EXPORTS, ToolExports, type GuestCallOutput } from '../load/tool-world.js';
import { clientRequestImports } from './client-requests.js';
import { IMAGE_MEMORY_IMPORT, IMAGE_SUFFIX } from '../load/engine-split.js';

/** Each split engine's image module (load/engine-split.ts), by the engine's module object. */
function imagesOf(modules: ReadonlyMap<string, WebAssembly.Module>): Map<WebAssembly.Module, WebAssembly.Module> | undefined {
  let images: Map<WebAssembly.Module, WebAssembly.Module> | undefined;
  for (const [name, image] of modules) {
    if (!name.endsWith(IMAGE_SUFFIX)) continue;
    const engine = modules.get(name.slice(0, -IMAGE_SUFFIX.length));
    if (engine !== undefined) (images ??= new Map()).set(engine, image);
  }
  return images;
}

/** jco's instantiation-mode entry point (sync mode). */
export type InstantiateFn = (
  getCoreModule: (name: string) => WebAssembly.Module,
  imports: Record<string, unknown>,
  instantiateCore?: (module: WebAssembly.Module, imports: WebAssembly.Imports) => WebAssembly.Instance,
) => Record<string, unknown>;


/** A host error message as a warning carries it (the main thread's messages are short; this keeps them so). */
function truncate(message: string): string {
  return message.length <= 4 * QUOTED_GUEST_CHARS ? message : `${message.slice(0, 4 * QUOTED_GUEST_CHARS)}…`;
}

/** A state key no store accepts is refused here, never posted (it counts as a host call all the same). */
function refuseBadKey(bridge: HostBridge, key: string): void {
  if (key.length !== 0 && key.length <= MAX_STATE_KEY_BYTES && Buffer.byteLength(key) <= MAX_STATE_KEY_BYTES) return;
  bridge.countHostCall();
  throw new Error(`INVALID_INPUT: state key must be a non-empty string of at most ${MAX_STATE_KEY_BYTES} bytes`);
}

/** The call an instance is serving. */
export interface ActiveCall {
  bridge: HostBridge;
  context: GuestCallContext;
  capabilities: GuestCapabilities;
  /** Bytes of captured stdio the call may still emit. */
  stdioBudget: number;
  stdioTruncated: boolean;
}


export class GuestInstance {
  readonly #tool: ToolExports;
  readonly #flushOutput: () => void;
  /** The instance's WASI layer: what a reset may leave behind of a call (its stdio streams). */
  readonly #wasi: ResettableHost;
  /** The linear memories the component's core instances define. */
  readonly #memories: WebAssembly.Memory[] = [];
  /** The exports of every core instance the glue made (what a snapshot records). */
  readonly #coreExports: WebAssembly.Exports[] = [];
  readonly #componentExports: Record<string, unknown>;
  /** Taken by `snapshot()` before the first call; undefined when not taken or not possible. */
  #snapshot: InstanceSnapshot | undefined;
  /** Calls since the instance was made or last restored (a snapshot is taken only at zero). */
  #callsSinceReset = 0;
  #current: ActiveCall | undefined;
  /** The current call's worktree, while it runs. */
  #worktree: WorktreeMount | undefined;
  /** Set once the instance trapped or exited: it must not be used again. */
  poisoned = false;
  /**
   * Set when the instance was made for one call's capabilities (a worktree, an
   * environment): guests read those once, while they initialize (wasi-libc's
   * preopens, the preview1 adapter's state), so such an instance serves only
   * the call it was made for and is never kept or reused.
   */
  readonly boundTo: ActiveCall | undefined;

  /**
   * Make an instance. With `boundTo`, the call is bound while the guest
   * initializes, so the guest sees that call's worktree and environment.
   */
  constructor(instantiate: InstantiateFn, modules: ReadonlyMap<string, WebAssembly.Module>, boundTo?: ActiveCall) {
    this.boundTo = boundTo;
    const wasi = createWasiImports({
      line: (stream, text) => this.#captured(stream, text),
      env: () => this.#current?.capabilities.env ?? [],
      preopens: () => this.#worktree?.preopens ?? [],
      http: (request): GuestHttpResult => {
        const active = this.#current;
        if (!active) return { ok: false, error: { tag: 'HTTP-request-denied' } };
        try {
          return active.bridge.request({ op: 'http', request }) as GuestHttpResult;
        } catch (error) {
          return { ok: false, error: { tag: 'internal-error', val: (error as Error).message } };
        }
      },
      socketsAllowed: () => this.#current?.capabilities.network === 'FULL_ACCESS',
    });
    this.#flushOutput = () => wasi.flushOutput();
    this.#wasi = wasi;
    if (boundTo) this.#bind(boundTo);
    let exports: Record<string, unknown>;
    try {
      exports = this.#instantiate(instantiate, modules, wasi.imports);
    } catch (error) {
      this.#unbind();
      throw error;
    }
    const tool = ToolExports.of(exports);
    if (!tool) {
      this.#unbind();
      throw new Error(`component does not export ${Object.values(TOOL_EXPORTS).join(' or ')}`);
    }
    this.#tool = tool;
    this.#componentExports = exports;
  }

  /**
   * Record this instance's state for later resets. Only before its first call
   * (describe() excepted: it carries no call's data, and every spare runs the
   * same one); a bound instance is never snapshotted. Returns whether it has one.
   */
  snapshot(): boolean {
    if (this.#snapshot) return true;
    if (this.boundTo !== undefined || this.poisoned || this.#callsSinceReset > 0) return false;
    this.#snapshot = InstanceSnapshot.take(this.#coreExports, this.#componentExports, this.#wasi);
    return this.#snapshot !== undefined;
  }

  /** Whether a reset may put the instance back (it has a snapshot and is not poisoned; the reset itself may still refuse). */
  get resettable(): boolean {
    return this.#snapshot !== undefined && !this.poisoned;
  }

  /**
   * Put the instance back as it was when snapshotted, so it can serve another
   * call as if new. Returns why it could not (the instance must then be
   * dropped), or undefined once reset.
   */
  reset(): RestoreRefusal | 'poisoned' | undefined {
    if (this.poisoned) return 'poisoned';
    if (!this.#snapshot) return 'no-snapshot';
    const refusal = this.#snapshot.restore();
    if (refusal === undefined) this.#callsSinceReset = 0;
    return refusal;
  }

  #instantiate(instantiate: InstantiateFn, modules: ReadonlyMap<string, WebAssembly.Module>, wasiImports: Record<string, unknown>): Record<string, unknown> {
    const images = imagesOf(modules);
    return instantiate(
      (name) => {
        const module = modules.get(name);
        if (!module) throw new Error(`component has no core module named ${name}`);
        return module;
      },
      { ...wasiImports, 'toolhost:tool/host': this.#hostImports() },
      (module, imports) => {
        const instance = new WebAssembly.Instance(module, imports);
        this.#coreExports.push(instance.exports);
        // Remember defined memories (an exported one that is not an import) to measure them.
        const imported = new Set(Object.values(imports ?? {}).flatMap((namespace) => Object.values(namespace as Record<string, unknown>)));
        let defined: WebAssembly.Memory | undefined;
        for (const value of Object.values(instance.exports)) {
          if (value instanceof WebAssembly.Memory && !imported.has(value)) defined ??= value;
          if (value instanceof WebAssembly.Memory && !imported.has(value) && !this.#memories.includes(value)) this.#memories.push(value);
        }
        // A split engine gets its tool's data segments now, before the glue instantiates another module or calls
        // an export: as its own active segments would have been at its instantiation (load/engine-split.ts).
        const image = images?.get(module);
        if (image !== undefined) {
          if (defined === undefined) throw new Error('a split engine exports no memory of its own');
          new WebAssembly.Instance(image, { [IMAGE_MEMORY_IMPORT.module]: { [IMAGE_MEMORY_IMPORT.name]: defined } });
        }
        return instance;
      },
    );
  }

  /** Bytes the instance holds between calls: its linear memory and its snapshot's copy (what the memory budget counts). */
  heldBytes(): number {
    return this.memoryBytes() + (this.#snapshot?.bytes ?? 0);
  }

  /** Bytes of linear memory the instance holds now (memory never shrinks: this is its peak). */
  memoryBytes(): number {
    return this.#memories.reduce((sum, memory) => sum + memory.buffer.byteLength, 0);
  }

  describe(): GuestToolInfo[] {
    return this.#tool.describe();
  }

  /** Run one call on this instance; throws whatever the guest or jco's glue threw. */
  call(active: ActiveCall, tool: string, args: string): GuestCallOutput {
    if (this.#current !== active) this.#bind(active);
    this.#callsSinceReset += 1;
    try {
      return this.#tool.call(tool, args);
    } finally {
      try {
        this.#flushOutput();
      } finally {
        this.#unbind();
      }
    }
  }

  /** Whether a call's capabilities must be bound while the guest initializes (see `boundTo`). */
  static needsBinding(active: Pick<ActiveCall, 'capabilities'>): boolean {
    return active.capabilities.filesystem !== undefined || active.capabilities.env.length > 0;
  }

  #bind(active: ActiveCall): void {
    this.#current = active;
    handlesServe(active.bridge);
    const filesystem = active.capabilities.filesystem;
    if (filesystem) this.#worktree = mountWorktree(filesystem.root, filesystem.readOnly, () => this.#current === active);
  }

  #unbind(): void {
    this.#current = undefined;
    handlesServe(undefined);
    this.#worktree?.dispose();
    this.#worktree = undefined;
  }

  #captured(stream: 'stdout' | 'stderr', text: string): void {
    const active = this.#current;
    if (!active || active.stdioTruncated) return;
    const bytes = Buffer.byteLength(text) + 1;
    if (bytes > active.stdioBudget) {
      active.stdioTruncated = true;
      active.bridge.post({ type: 'log', level: 'warn', source: stream, message: '[toolhost: further guest output dropped: per-call stdio limit reached]' });
      return;
    }
    active.stdioBudget -= bytes;
    active.bridge.post({ type: 'log', level: levelForStream(stream), source: stream, message: text });
  }

  #hostImports(): Record<string, unknown> {
    return {
      context: (): GuestCallContext => this.#current?.context ?? { callId: '' },
      progress: (pct: number | undefined, message: string | undefined): void => {
        const active = this.#current;
        if (!active) return;
        const event: { type: 'progress'; pct?: number; message?: string } = { type: 'progress' };
        if (pct !== undefined && Number.isFinite(pct)) event.pct = pct;
        if (message !== undefined) event.message = message;
        active.bridge.event(event, 8 + (message === undefined ? 0 : Buffer.byteLength(message)));
      },
      delta: (data: string): void => {
        this.#current?.bridge.event({ type: 'delta', data }, Buffer.byteLength(data));
      },
      log: (level: string, message: string): void => {
        const known: LogLevel = (LOG_LEVELS as readonly string[]).includes(level) ? (level as LogLevel) : 'info';
        this.#current?.bridge.event({ type: 'log', level: known, message, source: 'guest' }, Buffer.byteLength(message));
      },
      getState: (key: string): string | undefined => {
        const active = this.#current;
        if (!active) return undefined;
        try {
          // A key no store accepts never leaves the worker (it counts as a host call all the same).
          refuseBadKey(active.bridge, key);
          const value = active.bridge.request({ op: 'get-state', key });
          return typeof value === 'string' ? value : undefined;
        } catch (error) {
          // get-state cannot fail in the WIT: absent is the answer, and the host logs why, as an event of the
          // call (counted against its limits: past them the call ends), quoting at most a prefix of the key.
          active.bridge.warn(`[toolhost: get-state ${quoteGuest(key)} failed: ${truncate((error as Error).message)}]`);
          return undefined;
        }
      },
      setState: (key: string, value: string): void => {
        const active = this.#current;
        if (!active) throw 'set-state called outside a call';
        try {
          refuseBadKey(active.bridge, key);
          active.bridge.request({ op: 'set-state', key, value });
        } catch (error) {
          // A thrown string becomes the result's err payload in jco's glue.
          throw (error as Error).message;
        }
      },
      cancelled: (): boolean => this.#current?.bridge.cancelled() ?? false,
      // 0.2.0: requests to the calling client (a 0.1.0 component never calls them).
      ...clientRequestImports(() => this.#current?.bridge),
    };
  }
}
