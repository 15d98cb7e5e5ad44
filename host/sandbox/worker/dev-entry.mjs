// Development only: when toolhost runs from its TypeScript sources (vitest,
// tsx), workers load the .ts entry through tsx. Builds use entry.js directly.
import { register } from 'tsx/esm/api';

register();
const { default: runTask } = await import('./entry.ts');
export default runTask;
