// Development only: when the benchmark runs from its TypeScript sources
// (`npx tsx scripts/bench.ts`), the floor's worker loads the .ts task through
// tsx. `npm run bench` uses the compiled bench-echo-worker.js directly.
import { register } from 'tsx/esm/api';

register();
const { default: echo } = await import('./bench-echo-worker.ts');
export default echo;
