/**
 * Rewrites applied to jco's generated glue before it is cached.
 *
 * jco 1.35 wraps core exports for JSPI while it instantiates a component:
 *
 *     try { postReturn0Async = WebAssembly.promising(f); } catch (err) { postReturn0Async = f; }
 *
 * Node 20 has no JSPI, so every such line throws a TypeError, and V8 builds
 * its "WebAssembly.promising is not a function" message by re-parsing the
 * enclosing function: the glue's whole instantiation generator (thousands of
 * lines). That costs about a millisecond per throw for a small C tool and
 * several for a componentize-js one, on every new instance.
 *
 * The rewrite calls a helper that does what the catch would have done when
 * JSPI is missing (hand back the function itself) and calls the engine's
 * `WebAssembly.promising` when it exists, so the glue behaves the same on an
 * engine with JSPI; only the throw is gone.
 *
 * Changing a rewrite means bumping CACHE_FORMAT in component-cache.ts, so glue
 * cached by an older rewrite is not reused.
 */

const PROMISING_CALL = /\bWebAssembly\.promising\(/g;
const HELPER = '__toolhostPromising';

export interface PatchedGlue {
  source: string;
  /** How many `WebAssembly.promising(...)` calls were rewritten. */
  promisingCalls: number;
}

export function patchGlue(source: string): PatchedGlue {
  let promisingCalls = 0;
  const body = source.replace(PROMISING_CALL, () => {
    promisingCalls += 1;
    return `${HELPER}(`;
  });
  if (promisingCalls === 0) return { source, promisingCalls };
  // Appended: the glue module has finished evaluating before anyone calls its `instantiate`.
  const helper = `\nconst ${HELPER} = typeof WebAssembly.promising === 'function' ? WebAssembly.promising : (fn) => fn;\n`;
  return { source: body + helper, promisingCalls };
}
