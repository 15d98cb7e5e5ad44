/**
 * Config errors: every problem in `toolhost.yaml` is reported as
 * `<file>:<line>:<column>: <path> <what was expected>`, so editors and
 * terminals can jump to it.
 */
import { ToolhostError } from '../base/errors.js';

const kConfigError = Symbol.for('toolhost.ConfigError');

/** One problem found in a config file, with its position (1-based line and column). */
export interface ConfigProblem {
  line: number;
  column: number;
  /** Where in the document, as written (`tools[0].grant.network`); empty for the file as a whole. */
  path: string;
  /** What is wrong and what was expected, e.g. `must be one of call, conversation, worker (got "fast")`. */
  message: string;
}

/** What a {@link ConfigError} carries in `details`. */
export interface ConfigErrorDetails {
  /** The config file's absolute path. */
  file: string;
  /** Position of the problem (absent when the file could not be read). */
  line?: number;
  column?: number;
  /** Where in the document (`tools[0].grant.network`). */
  path?: string;
  /** Every problem found, formatted like the message (this error's first). */
  problems?: string[];
}

/**
 * A config file that cannot be used: a ToolhostError with code `INVALID_INPUT`
 * whose message starts with `<file>:<line>:<column>:` and whose details say
 * where ({@link ConfigErrorDetails}).
 */
export class ConfigError extends ToolhostError {
  declare readonly details: ConfigErrorDetails;
  readonly [kConfigError] = true;

  /**
   * @param details where the problem is (`file` absolute)
   * @param message the whole message, position included (see {@link formatProblem})
   */
  constructor(details: ConfigErrorDetails, message: string) {
    super('INVALID_INPUT', message, { details });
    this.name = 'ConfigError';
  }

  static override [Symbol.hasInstance](value: unknown): boolean {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[kConfigError] === true;
  }

  /**
   * The error for a list of problems (at least one): the message is the first
   * problem's, `details.problems` lists them all.
   *
   * @param file the config file's absolute path
   * @param display the file as it is shown in messages
   */
  static fromProblems(file: string, display: string, problems: readonly ConfigProblem[]): ConfigError {
    const [first] = problems;
    if (!first) throw new TypeError('ConfigError.fromProblems needs at least one problem');
    const details: ConfigErrorDetails = { file, line: first.line, column: first.column, path: first.path };
    details.problems = problems.map((problem) => formatProblem(display, problem));
    return new ConfigError(details, formatProblem(display, first));
  }
}

/** Format a problem as `<file>:<line>:<column>: <path> <message>`. */
export function formatProblem(display: string, problem: ConfigProblem): string {
  const subject = problem.path === '' ? '' : `${problem.path} `;
  return `${display}:${problem.line}:${problem.column}: ${subject}${problem.message}`;
}
