// node:fs with the globSync Node 22 added, for the conformance suite on Node 20 (node20-hooks.mjs).
import { createRequire } from 'node:module';

export * from 'node:fs';
export { default } from 'node:fs';

// tinyglobby is installed beside the suite (scripts/conformance.mjs), found from the suite's directory.
const require = createRequire(process.env.TOOLHOST_CONFORMANCE_DIR + '/package.json');
const { globSync: glob } = require('tinyglobby');

export function globSync(pattern, options = {}) {
  return glob(pattern, { cwd: options.cwd ?? process.cwd(), dot: true });
}
