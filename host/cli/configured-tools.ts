/** Loading the components a config names, with errors that point at the config entry. */
import { ToolhostError } from '../core/errors.js';
import type { ToolLoad } from '../config/index.js';
import type { ToolRegistry } from '../index.js';

/** Register each configured component; a failure names the config entry (`file:line:col:`) it came from. */
export async function registerConfiguredComponents(registry: ToolRegistry, loads: readonly ToolLoad[]): Promise<void> {
  for (const load of loads) {
    try {
      await registry.registerWasmTools(load.path, load.options);
    } catch (error) {
      if (load.origin === undefined || !(error instanceof ToolhostError)) throw error;
      const { file, line, column } = load.origin;
      throw new ToolhostError(error.code, `${file}:${line}:${column}: tools entry ${load.path}: ${error.message}`, { details: error.details });
    }
  }
}
