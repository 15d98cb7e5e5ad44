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
 * jco's `_debugLog` reads `process.env.JCO_DEBUG` on every call (tens of
 * times per guest call: each is a lookup in the environment, which V8 cannot
 * optimize away). The rewrite reads it once, when the glue module loads, so
 * JCO_DEBUG still works when set before the process starts.
 *
 * Another rewrite caps the resource handles an instance holds (see
 * `capOwnHandles`).
 *
 * Changing a rewrite means bumping CACHE_FORMAT in component-cache.ts, so glue
 * cached by an older rewrite is not reused.
 */

const PROMISING_CALL = /\bWebAssembly\.promising\(/g;
const HELPER = '__toolhostPromising';
/** jco's debug logger, as 1.35 writes it: the environment is read on every call. */
const DEBUG_LOG_CHECK = /(const _debugLog = \(\.\.\.args\) => \{\s*)if \(!globalThis\?\.process\?\.env\?\.JCO_DEBUG\) \{ return; \}/;
const DEBUG_FLAG = '__toolhostJcoDebug';

export interface PatchedGlue {
  source: string;
  /** How many `WebAssembly.promising(...)` calls were rewritten. */
  promisingCalls: number;
  /** Whether the glue exposes its state for snapshot-and-restore (see `exposeGlueState`). */
  exposesState: boolean;
  /** Whether the glue counts the handles an instance holds against the cap (see `capOwnHandles`). */
  capsHandles: boolean;
  /** Whether jco's `_debugLog` now reads JCO_DEBUG once instead of on every call. */
  debugLogHoisted: boolean;
}

/**
 * Where the patched glue puts its state digest on the exports object
 * `instantiate` returns: a function returning the state as a flat list of
 * primitives (`GlueStateDigest`). Two digests are equal when their items are.
 */
export const GLUE_STATE = Symbol.for('toolhost.glue-state');

/** The glue's state as the digest function returns it: numbers, booleans and undefined, each array behind its length. */
export type GlueStateDigest = readonly unknown[];

/**
 * Where the patched glue puts its resource tables (see `GlueResources`), so a
 * reset can put them back when a call only made handles to host objects that
 * hold nothing of the call (the stdout stream a guest's first write asks for).
 */
export const GLUE_RESOURCES = Symbol.for('toolhost.glue-resources');

/** A handle table of jco's glue: `[free-list head, (next, rep) pairs...]`, with the reps it ever created. */
export type GlueHandleTable = unknown[] & { _createdReps?: Set<unknown> };

/** The glue's resource state, reachable only through closures without this hook. */
export interface GlueResources {
  /** Each handle table with the capture table (rep → host object) of the same resource type, when it has one. */
  tables(): Array<[GlueHandleTable, Map<unknown, unknown> | undefined]>;
  /** The next-rep counters of the capture tables, in the order of `tables()` (undefined for a table without one). */
  counters(): Array<number | undefined>;
  setCounters(values: ReadonlyArray<number | undefined>): void;
}

export function patchGlue(source: string): PatchedGlue {
  let promisingCalls = 0;
  let body = source.replace(PROMISING_CALL, () => {
    promisingCalls += 1;
    return `${HELPER}(`;
  });
  // Appended: the glue module has finished evaluating before anyone calls its `instantiate`.
  if (promisingCalls > 0) body += `\nconst ${HELPER} = typeof WebAssembly.promising === 'function' ? WebAssembly.promising : (fn) => fn;\n`;
  const debugLogHoisted = DEBUG_LOG_CHECK.test(body);
  if (debugLogHoisted) {
    // Declared with var at the top: _debugLog may run while the module evaluates, before a later const would exist.
    body = `var ${DEBUG_FLAG} = Boolean(globalThis?.process?.env?.JCO_DEBUG);\n${body.replace(DEBUG_LOG_CHECK, (_match, head: string) => `${head}if (!${DEBUG_FLAG}) { return; }`)}`;
  }
  const capped = capOwnHandles(body);
  const exposed = exposeGlueState(capped ?? body);
  return { source: exposed ?? capped ?? body, promisingCalls, exposesState: exposed !== undefined, capsHandles: capped !== undefined, debugLogHoisted };
}

/**
 * Every resource the host hands a guest (a WASI stream, pollable, descriptor,
 * HTTP fields or body...) becomes an owned handle in one of the instance's
 * handle tables (`rscTableCreateOwn`), and leaves it when the guest drops it
 * or hands it back (`rscTableRemove` of an owned handle). Without a cap a
 * guest could open handles in a loop and keep them, growing its worker's heap
 * until the worker dies. The rewrite keeps a running count per instance; when
 * it reaches the cap the worker names (worker/handle-cap.ts) it counts the
 * owned handles in the tables exactly (so a count that drifted, e.g. tables
 * put back by an instance reset, is corrected), and only if the guest really
 * holds that many does the worker end the call (OUTPUT_LIMIT_EXCEEDED), or the
 * glue trap when no call is being served.
 *
 * Written against jco 1.35's glue: applied only when both functions and every
 * handle table look as expected; otherwise handles are not counted (the
 * worker heap cap remains).
 */
const CREATE_OWN = 'function rscTableCreateOwn(table, rep) {';
const REMOVE_RETURN = '    borrowTask?.removeBorrowedHandle();\n    return { rep, scope, own };';

function capOwnHandles(source: string): string | undefined {
  if (source.split(CREATE_OWN).length !== 2 || source.split(REMOVE_RETURN).length !== 2) return undefined;
  const tables = [...source.matchAll(/^\s*const (handleTable\d+)\s*=\s*\[T_FLAG, 0\];/gm)].map((match) => match[1]!);
  if ((source.match(/\b(?:const|let) handleTable\d+\b/g) ?? []).length !== tables.length) return undefined;
  const hooks = "globalThis[Symbol.for('toolhost.handles')]";
  const create = [
    'const __toolhostHandles = { held: 0 };',
    // Owned handles in use: a live entry's scope slot has no T_FLAG (a free one is a free-list link), its rep slot has it.
    '  function __toolhostHeldExactly() {',
    '    let held = 0;',
    `    for (const table of [${tables.join(', ')}]) for (let i = 2; i < table.length; i += 2) if ((table[i] & T_FLAG) === 0 && (table[i + 1] & T_FLAG) !== 0) held += 1;`,
    '    return held;',
    '  }',
    `  ${CREATE_OWN}`,
    `    const __toolhostMax = ${hooks}?.max ?? Infinity;`,
    '    if (__toolhostHandles.held >= __toolhostMax) {',
    // (A table not declared yet, while the component instantiates, holds nothing: keep the running count.)
    '      try { __toolhostHandles.held = __toolhostHeldExactly(); } catch {}',
    '      if (__toolhostHandles.held >= __toolhostMax) {',
    `        ${hooks}?.refused();`,
    "        throw new WebAssembly.RuntimeError('the guest holds too many resource handles');",
    '      }',
    '    }',
    '    __toolhostHandles.held += 1;',
  ].join('\n');
  const remove = '    borrowTask?.removeBorrowedHandle();\n    if (own && __toolhostHandles.held > 0) __toolhostHandles.held -= 1;\n    return { rep, scope, own };';
  return source.replace(CREATE_OWN, () => create).replace(REMOVE_RETURN, () => remove);
}

/**
 * The glue keeps per-instance JS state in closures: resource handle tables
 * (one array per resource type, with a free list), the host objects behind
 * them (capture tables), borrow scopes, the current-task stacks, and each
 * component's async state (trapped flag, waitable and subtask tables). A
 * worker may reset a used instance instead of replacing it only when all of
 * that is exactly as it was when the instance was snapshotted: the digest
 * below lets it check. A call that created a resource (even one it dropped:
 * the free list moved, so the next handle number would tell), left a borrow
 * or a task behind, or trapped, changes the digest, and the instance is
 * replaced.
 *
 * Written against jco 1.35's glue. The hook is added only when every name it
 * reads is declared where expected; otherwise the glue is left as it is and
 * its instances are never reset (the worker sees no digest).
 */
/** The glue's fixed state variables, and the expression that digests each. */
const FIXED_STATE: Record<string, string> = {
  RESOURCE_SCOPE_TASKS: 'RESOURCE_SCOPE_TASKS.size',
  curResourceBorrows: 'curResourceBorrows.length',
  ASYNC_TASKS_BY_COMPONENT_IDX: '[...ASYNC_TASKS_BY_COMPONENT_IDX.values()].map((tasks) => tasks.length)',
  ASYNC_CURRENT_TASK_IDS: 'ASYNC_CURRENT_TASK_IDS.length',
  ASYNC_CURRENT_COMPONENT_IDXS: 'ASYNC_CURRENT_COMPONENT_IDXS.length',
  ASYNC_STATE:
    '[...ASYNC_STATE.entries()].map(([idx, state]) => [idx, __toolhostTrapped(state), state.mayLeave, state.errored?.(), state.handles?.data?.().length, state.handles?.data?.()[0], state.subtasks?.data?.().length, state.subtasks?.data?.()[0]])',
};

function exposeGlueState(source: string): string | undefined {
  const start = 'let gen= (function* _initGenerator () {';
  const end = 'const maybeSyncReturn = runNext(null);';
  if (source.split(start).length !== 2 || source.split(end).length !== 2) return undefined;
  const fixed = Object.keys(FIXED_STATE);
  // A name the glue never mentions is state it does not have; one it mentions but declares some other way is unknown.
  const present = fixed.filter((name) => new RegExp(`\\b${name}\\b`).test(source));
  for (const name of present) {
    if (!new RegExp(`^\\s*(?:const|let) ${name}\\s*=`, 'm').test(source)) return undefined;
  }
  const handleTables = [...source.matchAll(/^\s*const handleTable(\d+)\s*=\s*\[T_FLAG, 0\];/gm)].map((match) => match[1]!);
  const captureTables = [...source.matchAll(/^\s*const captureTable(\d+)\s*=\s*new Map\(\);/gm)].map((match) => match[1]!);
  // Every resource table the glue declares is read, or there is no hook.
  const declared = (source.match(/\b(?:const|let) (?:handleTable|captureTable)\d+\b/g) ?? []).length;
  if (declared !== handleTables.length + captureTables.length) return undefined;
  const parts = [
    ...handleTables.map((n) => `handleTable${n}, handleTable${n}._createdReps?.size`),
    ...captureTables.map((n) => `captureTable${n}.size`),
    ...present.map((name) => FIXED_STATE[name]),
  ];
  const digest = [
    'let __toolhostGlueState;',
    'let __toolhostGlueResources;',
    'const __toolhostTrapped = (state) => { try { state.throwIfTrapped(); return false; } catch { return true; } };',
    // Arrays flattened, each behind its length (so the layout is unambiguous): compared item by item, no string is made.
    'const __toolhostFlat = (out, value) => { if (Array.isArray(value)) { out.push(value.length); for (let i = 0; i < value.length; i += 1) __toolhostFlat(out, value[i]); } else { out.push(value); } return out; };',
    start,
    `__toolhostGlueState = () => __toolhostFlat([], [${parts.join(', ')}]);`,
    glueResources(source, handleTables, captureTables),
  ].join('\n');
  const expose = [
    end,
    "if (maybeSyncReturn !== null && typeof maybeSyncReturn === 'object') {",
    "  Object.defineProperty(maybeSyncReturn, Symbol.for('toolhost.glue-state'), { value: __toolhostGlueState });",
    "  if (__toolhostGlueResources) Object.defineProperty(maybeSyncReturn, Symbol.for('toolhost.glue-resources'), { value: __toolhostGlueResources });",
    '}',
  ].join('\n');
  return source.replace(start, () => digest).replace(end, () => expose);
}

/**
 * The resource hook (`GlueResources`), as a statement inside the glue's
 * generator, where its tables are in scope; functions, because the tables
 * are declared further down. Empty (no hook: resets refuse on any resource
 * change, as before) unless every capture table has its counter and belongs
 * to a handle table.
 */
function glueResources(source: string, handleTables: readonly string[], captureTables: readonly string[]): string {
  const counters = new Set([...source.matchAll(/^\s*let captureCnt(\d+)\s*=\s*0;/gm)].map((match) => match[1]!));
  if (counters.size !== captureTables.length || !captureTables.every((n) => counters.has(n) && handleTables.includes(n))) return '';
  const captured = new Set(captureTables);
  const tables = handleTables.map((n) => `[handleTable${n}, ${captured.has(n) ? `captureTable${n}` : 'undefined'}]`);
  const values = handleTables.map((n) => (captured.has(n) ? `captureCnt${n}` : 'undefined'));
  const sets = handleTables.flatMap((n, i) => (captured.has(n) ? [`captureCnt${n} = values[${i}];`] : []));
  return `__toolhostGlueResources = { tables: () => [${tables.join(', ')}], counters: () => [${values.join(', ')}], setCounters: (values) => { ${sets.join(' ')} } };`;
}
