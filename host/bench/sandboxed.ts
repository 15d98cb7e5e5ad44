/**
 * A tool under one isolation mode, ready to measure: a registry of its own
 * (its own pool), the components that hold the tool registered, and the
 * subject that calls it. The sequential rows open one at a time; the paired
 * phase opens several at once.
 */
import { createRegistry, registryOptions, type RegistryOptions } from '../compose/registry.js';
import type { ResolvedConfig } from '../config/resolve.js';
import { ToolhostError } from '../base/errors.js';
import { createDefaultLogger } from '../base/logger.js';
import type { WasmLoadOptions } from '../core/registry.js';
import type { Isolation } from './row.js';
import type { CallOutcome, Subject } from './runner.js';

export interface ToolSource {
  path: string;
  options: WasmLoadOptions;
}

/** A tool measured under each isolation mode, from these components. */
export interface SandboxedTarget {
  tool: string;
  label: string;
  args: unknown;
  calls: number;
  sources: ToolSource[];
}

/** What a registry of the benchmark is sized by. */
export interface PoolShape {
  threads: number;
  concurrency: readonly number[];
}

/** The host's registry options for a benchmark: the config's, quiet (errors only), with the run's threads. */
/** The tracer every benchmark registry uses (`toolhost bench --trace`: 100 % of calls to a local sink), if any. */
let benchTracer: RegistryOptions['tracer'];
export function traceBenchCalls(tracer: RegistryOptions['tracer']): void {
  benchTracer = tracer;
}

export function benchRegistryOptions(config: ResolvedConfig, shape: PoolShape): RegistryOptions {
  const options = registryOptions(config, { logger: createDefaultLogger('error'), ...(benchTracer === undefined ? {} : { tracer: benchTracer }) });
  const maxQueue = Math.max(shape.threads * 64, ...shape.concurrency);
  return { ...options, sandbox: { ...options.sandbox, threads: shape.threads, maxQueue } };
}

export function outcomeOf(result: { isError: boolean; error?: { code: string; message: string }; accounting?: CallOutcome['accounting'] }): CallOutcome {
  const outcome: CallOutcome = { ok: !result.isError };
  if (result.accounting) outcome.accounting = result.accounting;
  if (result.error) outcome.error = `${result.error.code}: ${result.error.message}`;
  return outcome;
}

export interface OpenedSubject {
  subject: Subject;
  /** The component file that holds the tool, when it came from a file. */
  holder?: string;
  close(): Promise<void>;
}

/** Open `target` under `isolation`; TOOL_NOT_FOUND (the registry closed) when no source holds the tool. */
export async function openSandboxed(config: ResolvedConfig, shape: PoolShape, target: SandboxedTarget, isolation: Isolation): Promise<OpenedSubject> {
  const rssBefore = process.memoryUsage.rss();
  const registry = createRegistry(benchRegistryOptions(config, shape));
  let holder: string | undefined;
  try {
    for (const source of target.sources) {
      const report = await registry.registerWasmTools(source.path, { ...source.options, isolation });
      for (const component of report.components) {
        if (component.tools.includes(target.tool) && component.path !== undefined) holder ??= component.path;
      }
    }
    if (!registry.has(target.tool)) {
      throw new ToolhostError('TOOL_NOT_FOUND', `no tool named "${target.tool}" in ${target.sources.map((s) => s.path).join(', ')} (tools: ${registry.names().join(', ') || 'none'})`);
    }
  } catch (error) {
    await registry.close();
    throw error;
  }
  const callOptions = isolation === 'conversation' ? { conversationId: 'bench' } : {};
  return {
    subject: {
      id: `toolhost:${target.tool}:${isolation}`,
      label: `${target.label}, isolation=${isolation}`,
      kind: 'toolhost',
      tool: target.tool,
      isolation,
      calls: target.calls,
      threads: shape.threads,
      rssBefore,
      call: async () => outcomeOf(await registry.execute(target.tool, target.args, callOptions)),
    },
    ...(holder === undefined ? {} : { holder }),
    close: () => registry.close(),
  };
}
