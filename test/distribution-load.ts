/** Loads one remote source into a fresh registry and reports its tools, or the ToolhostError that refused it. */
import { ToolhostError } from '../host/index.js';
import type { DistributionOptions } from '../host/distribution/options.js';
import { makeRegistry } from './helpers.js';

export async function loadSource(source: string, distribution: DistributionOptions): Promise<{ error?: ToolhostError; tools?: string[] }> {
  const registry = makeRegistry({ distribution });
  try {
    const report = await registry.registerWasmTools(source);
    return { tools: report.components.flatMap((component) => component.tools) };
  } catch (error) {
    if (error instanceof ToolhostError) return { error };
    throw error;
  } finally {
    await registry.close();
  }
}
