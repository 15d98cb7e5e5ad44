// Development only (toolhost running from its TypeScript sources: vitest, tsx):
// the CommonJS front of dev-entry.mjs, for the reason bootstrap.cts gives.
const entry = import('./dev-entry.mjs').then((module) => module.default);

module.exports = async function runTask(task) {
  return (await entry)(task);
};
