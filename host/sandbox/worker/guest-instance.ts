/**
 * One instance of a component in a worker, with the host imports bound to
 * whichever call is using it. Instances can be made before a call (a spare)
 * because the imports look up the current call when the guest calls them.
 */
import type { LogLevel } from '../../core/events.js';
import { LOG_LEVELS } from '../../core/events.js';
import type { GuestCallContext, GuestToolInfo } from '../protocol.js';
import { createWasiImports, levelForStream } from '../wasi/capabilities.js';
import type { HostBridge } from './host-bridge.js';

/** jco's instantiation-mode entry point (sync mode). */
export type InstantiateFn = (
  getCoreModule: (name: string) => WebAssembly.Module,
  imports: Record<string, unknown>,
  instantiateCore?: (module: WebAssembly.Module, imports: WebAssembly.Imports) => WebAssembly.Instance,
) => Record<string, unknown>;

interface ToolExports {
  describe(): GuestToolInfo[];
  call(name: string, args: string): string;
}

/** The call an instance is serving. */
export interface ActiveCall {
  bridge: HostBridge;
  context: GuestCallContext;
  /** Bytes of captured stdio the call may still emit. */
  stdioBudget: number;
  stdioTruncated: boolean;
}

const TOOL_INTERFACE = 'toolhost:tool/tool@0.1.0';

export class GuestInstance {
  readonly #tool: ToolExports;
  readonly #flushOutput: () => void;
  /** The linear memories the component's core instances define. */
  readonly #memories: WebAssembly.Memory[] = [];
  #current: ActiveCall | undefined;
  /** Set once the instance trapped or exited: it must not be used again. */
  poisoned = false;

  constructor(instantiate: InstantiateFn, modules: ReadonlyMap<string, WebAssembly.Module>) {
    const wasi = createWasiImports({
      line: (stream, text) => this.#captured(stream, text),
    });
    this.#flushOutput = () => wasi.flushOutput();
    const exports = instantiate(
      (name) => {
        const module = modules.get(name);
        if (!module) throw new Error(`component has no core module named ${name}`);
        return module;
      },
      { ...wasi.imports, 'toolhost:tool/host': this.#hostImports() },
      (module, imports) => {
        const instance = new WebAssembly.Instance(module, imports);
        // Remember defined memories (an exported one that is not an import) to measure them.
        const imported = new Set(Object.values(imports ?? {}).flatMap((namespace) => Object.values(namespace as Record<string, unknown>)));
        for (const value of Object.values(instance.exports)) {
          if (value instanceof WebAssembly.Memory && !imported.has(value) && !this.#memories.includes(value)) this.#memories.push(value);
        }
        return instance;
      },
    );
    const tool = (exports[TOOL_INTERFACE] ?? exports.tool) as ToolExports | undefined;
    if (!tool || typeof tool.call !== 'function' || typeof tool.describe !== 'function') {
      throw new Error(`component does not export ${TOOL_INTERFACE}`);
    }
    this.#tool = tool;
  }

  /** Bytes of linear memory the instance holds now (memory never shrinks: this is its peak). */
  memoryBytes(): number {
    return this.#memories.reduce((sum, memory) => sum + memory.buffer.byteLength, 0);
  }

  describe(): GuestToolInfo[] {
    return this.#tool.describe();
  }

  /** Run one call on this instance; throws whatever the guest or jco's glue threw. */
  call(active: ActiveCall, tool: string, args: string): string {
    this.#current = active;
    try {
      return this.#tool.call(tool, args);
    } finally {
      try {
        this.#flushOutput();
      } finally {
        this.#current = undefined;
      }
    }
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
        active.bridge.event(event, 8 + (message?.length ?? 0));
      },
      delta: (data: string): void => {
        this.#current?.bridge.event({ type: 'delta', data }, data.length);
      },
      log: (level: string, message: string): void => {
        const known: LogLevel = (LOG_LEVELS as readonly string[]).includes(level) ? (level as LogLevel) : 'info';
        this.#current?.bridge.event({ type: 'log', level: known, message, source: 'guest' }, message.length);
      },
      getState: (key: string): string | undefined => {
        const active = this.#current;
        if (!active) return undefined;
        try {
          const value = active.bridge.request({ op: 'get-state', key });
          return typeof value === 'string' ? value : undefined;
        } catch (error) {
          // get-state cannot fail in the WIT: absent is the answer, and the host logs why.
          active.bridge.post({ type: 'log', level: 'warn', source: 'guest', message: `[toolhost: get-state "${key}" failed: ${(error as Error).message}]` });
          return undefined;
        }
      },
      setState: (key: string, value: string): void => {
        const active = this.#current;
        if (!active) throw 'set-state called outside a call';
        try {
          active.bridge.request({ op: 'set-state', key, value });
        } catch (error) {
          // A thrown string becomes the result's err payload in jco's glue.
          throw (error as Error).message;
        }
      },
      cancelled: (): boolean => this.#current?.bridge.cancelled() ?? false,
    };
  }
}
