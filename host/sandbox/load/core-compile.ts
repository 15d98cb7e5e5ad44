/**
 * Compiling a component's core modules. jco's transpile reads a component's
 * structure but not its functions' code, so a module whose code does not
 * validate first fails here: that is the component's fault (COMPONENT_INVALID),
 * not an internal error.
 */
import { ToolhostError } from '../../base/errors.js';
import type { CoreModules } from '../protocol.js';
import type { CoreModuleBytes } from '../process/messages.js';

/** Compiles each core module; a module that does not compile rejects with COMPONENT_INVALID naming it. */
export function compileCoreModules(modules: CoreModuleBytes, what: string): Promise<CoreModules> {
  return Promise.all(modules.map(async ([name, bytes]): Promise<[string, WebAssembly.Module]> => {
    try {
      return [name, await WebAssembly.compile(bytes)];
    } catch (error) {
      if (!(error instanceof WebAssembly.CompileError)) throw error;
      throw new ToolhostError('COMPONENT_INVALID', `${what}: its core module ${name} does not compile (${error.message.replace(/^WebAssembly\.compile\(\): /, '')})`, {
        details: { reason: 'compile', module: name },
      });
    }
  }));
}
