// A small kit for writing toolhost tools in JavaScript (componentize-js).
//
//   import { defineComponent, parseArgs, requireString, toolError } from '../js-sdk/toolkit.js';
//
//   const TOOLS = [{ name, description, inputSchema, outputSchema?, streaming, idempotent, run(argsText) }];
//
// `run` gets the arguments as JSON text and returns the result as JSON text
// (a string) or as a value to serialize, or a promise of either (for fetch()).
//   export const tool = defineComponent('my-component', TOOLS);
//
// Tool failures are thrown as plain `{ code, message, details }` objects,
// which the bindings lift into the WIT `tool-error`. A host call's refusal
// (`sample`, `elicit`, `setState`, as `toolhost build` binds them) is thrown
// as the host's tool-error of that shape too (code PERMISSION_DENIED,
// CLIENT_UNSUPPORTED, OUTPUT_LIMIT_EXCEEDED, ...); left uncaught it reaches
// the caller with its code. Anything else a tool throws becomes the
// tool-error `UNCAUGHT_EXCEPTION` with its message and stack (what
// `toolhost build`'s guard gives a raw `tool` export too): an Error escaping
// `call` would trap the whole instance.

/** A tool-error value; `details` is any JSON value (or undefined). */
export function toolError(code, message, details) {
  return {
    code,
    message,
    details: details === undefined ? undefined : JSON.stringify(details),
  };
}

export function isToolError(e) {
  return e !== null && typeof e === 'object' && typeof e.code === 'string' && typeof e.message === 'string' && !(e instanceof Error);
}

/**
 * The tool-error a host call's refusal stands for, or undefined when `e` is not one. componentize-js throws an
 * import's `result` error as an Error whose `payload` is the error value: a `tool-error` record (`sample`,
 * `elicit`) or a string (`set-state`: "CODE: message", e.g. `OUTPUT_LIMIT_EXCEEDED: ...`).
 */
export function hostRefusal(e) {
  if (isToolError(e)) return e;
  if (e === null || typeof e !== 'object' || !Object.prototype.hasOwnProperty.call(e, 'payload')) return undefined;
  const payload = e.payload;
  if (payload !== null && typeof payload === 'object' && typeof payload.code === 'string' && typeof payload.message === 'string') {
    return { code: payload.code, message: payload.message, details: typeof payload.details === 'string' ? payload.details : undefined };
  }
  if (typeof payload === 'string') {
    const coded = /^([A-Z][A-Z0-9_]*): ([\s\S]*)$/.exec(payload);
    return coded ? { code: coded[1], message: coded[2], details: undefined } : { code: 'HOST_ERROR', message: payload, details: undefined };
  }
  return undefined;
}

/** Run one host call (`() => sample(request)`), throwing its refusal as the host's tool-error `{ code, message, details }`. */
export function hostCall(run) {
  try {
    return run();
  } catch (e) {
    throw hostRefusal(e) ?? e;
  }
}

/** The tool-error UNCAUGHT_EXCEPTION for something `tool` threw: its message (`TypeError: boom`) and stack. */
export function uncaughtError(tool, e) {
  const message = e instanceof Error ? (e.name && e.name !== 'Error' ? `${e.name}: ${e.message}` : e.message) : String(e);
  const details = { tool };
  if (e instanceof Error) {
    details.name = e.name;
    if (typeof e.stack === 'string' && e.stack !== '') details.stack = e.stack;
  }
  return toolError('UNCAUGHT_EXCEPTION', message, details);
}

export const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * Parse `args` as a JSON object, or throw INVALID_ARGS. With `allowed`, an
 * unknown key is INVALID_ARGS too. The host validates args against the input
 * schema first; these checks are a backstop.
 */
export function parseArgs(args, allowed) {
  let value;
  try {
    value = JSON.parse(args);
  } catch (e) {
    throw toolError('INVALID_ARGS', `arguments are not valid JSON: ${e.message}`);
  }
  if (!isObject(value)) {
    throw toolError('INVALID_ARGS', 'arguments must be a JSON object');
  }
  if (allowed) {
    for (const key of Object.keys(value)) {
      if (!allowed.includes(key)) {
        throw toolError('INVALID_ARGS', `unknown argument "${key}"`, { field: key });
      }
    }
  }
  return value;
}

export function requireString(args, key) {
  if (typeof args[key] !== 'string') {
    throw toolError('INVALID_ARGS', `"${key}" must be a string`, { field: key });
  }
  return args[key];
}

/**
 * Runs `t.run(args)` and maps its result with `output` (sync or async: an async tool's export returns the promise,
 * and componentize-js runs the event loop until it settles). A thrown tool-error passes through; the engine's
 * "too much recursion" becomes TOO_DEEP; anything else becomes UNCAUGHT_EXCEPTION, since an Error escaping `call`
 * would trap the whole instance.
 */
export function runTool(name, t, args, output) {
  const fail = (e) => {
    // A host call's refusal the tool did not catch reaches the caller with the host's code, not as UNCAUGHT_EXCEPTION.
    const refusal = hostRefusal(e);
    if (refusal !== undefined) throw refusal;
    // JSON.stringify recurses natively, and the engine's stack allows only
    // a few hundred levels of nesting (parsing has no such limit).
    if (e instanceof Error && e.name === 'InternalError' && /too much recursion/.test(e.message)) {
      throw toolError('TOO_DEEP', `${name}: the value is nested too deeply (this engine allows a few hundred levels)`);
    }
    throw uncaughtError(name, e);
  };
  try {
    const result = t.run(args);
    if (result && typeof result.then === 'function') return result.then(output, fail);
    return output(result);
  } catch (e) {
    return fail(e);
  }
}

/** The `tool` export of a component carrying `tools`. */
export function defineComponent(componentName, tools) {
  return {
    describe() {
      return tools.map((t) => ({
        name: t.name,
        description: t.description,
        inputSchema: JSON.stringify(t.inputSchema),
        outputSchema: t.outputSchema === undefined ? undefined : JSON.stringify(t.outputSchema),
        streaming: t.streaming,
        idempotent: t.idempotent,
      }));
    },

    call(name, args) {
      const t = tools.find((x) => x.name === name);
      if (t === undefined) {
        throw toolError('UNKNOWN_TOOL', `no tool named "${name}" in component ${componentName}`, {
          tools: tools.map((x) => x.name),
        });
      }
      return runTool(name, t, args, (result) => (typeof result === 'string' ? result : JSON.stringify(result)));
    },
  };
}

// The worktree helpers (wasi:filesystem): tree-shaken away from a tool that does not use them.
export { WORKTREE, list, readBytes, readText, stat, worktreeRoot, writeBytes, writeText } from './worktree.js';
