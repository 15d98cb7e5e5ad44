// Module hooks that let the MCP conformance suite run on Node 20 (see ../conformance.mjs): the suite's
// bundle imports `globSync` from `fs` (added in Node 22), which it uses only to aggregate results
// (tier-check), never in a server scenario. Its `fs` import is resolved to node20-fs.mjs: all of
// node:fs, plus globSync from tinyglobby. Nothing else of the suite is touched.
let shim;

export function initialize(data) {
  shim = data.shim;
}

export async function resolve(specifier, context, next) {
  if ((specifier === 'fs' || specifier === 'node:fs') && context.parentURL?.includes('/@modelcontextprotocol/conformance/')) {
    return { url: shim, shortCircuit: true };
  }
  return next(specifier, context);
}
