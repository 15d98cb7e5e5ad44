/**
 * The logger toolhost writes to: pino's call shape, so a pino logger can be
 * passed as is. The default writes JSON lines to stderr (never stdout, which
 * belongs to the CLI's output and to MCP's stdio transport).
 */
import { pino } from 'pino';

type LogFn = (obj: Record<string, unknown>, msg?: string) => void;

export interface Logger {
  trace: LogFn;
  debug: LogFn;
  info: LogFn;
  warn: LogFn;
  error: LogFn;
  child(bindings: Record<string, unknown>): Logger;
  /** Whether `level` would be written (pino has it); lets a hot path skip building a line nobody reads. */
  isLevelEnabled?(level: string): boolean;
}

/** A pino logger on stderr; the level comes from `TOOLHOST_LOG` (default `warn`). */
export function createDefaultLogger(level = process.env.TOOLHOST_LOG ?? 'warn'): Logger {
  return pino({ name: 'toolhost', level }, pino.destination({ fd: 2, sync: true }));
}

/** A logger that drops everything. */
export const silentLogger: Logger = {
  trace() {},
  debug() {},
  info() {},
  warn() {},
  error() {},
  child() {
    return silentLogger;
  },
};
