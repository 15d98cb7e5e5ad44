/** A usage problem with the command line: the CLI prints it with `usage: toolhost --help` and exits 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}
