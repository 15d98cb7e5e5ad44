/**
 * The logger toolhost writes to: pino's call shape, so a pino logger can be
 * passed as is. The default writes JSON lines to stderr (never stdout, which
 * belongs to the CLI's output and to MCP's stdio transport).
 */
import { createRequire } from 'node:module';
import type { pino as Pino } from 'pino';

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

/**
 * pino, loaded on first use (synchronously: logging is): a process that logs
 * nothing, like most CLI calls, does not pay for it (~20 ms of start-up).
 */
let loaded: typeof Pino | undefined;
export function loadPino(): typeof Pino {
  loaded ??= (createRequire(import.meta.url)('pino') as { pino: typeof Pino }).pino;
  return loaded;
}

const LEVELS = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60, silent: Infinity } as const;
type LevelName = keyof typeof LEVELS;

/** `make`'s logger, made when a line at a level at or above `threshold` is first logged. */
function lazyLogger(threshold: number, make: () => Logger): Logger {
  let made: Logger | undefined;
  const real = (): Logger => (made ??= make());
  const at = (name: Exclude<LevelName, 'fatal' | 'silent'>): LogFn => (obj, msg) => {
    if (LEVELS[name] >= threshold) real()[name](obj, msg);
  };
  return {
    trace: at('trace'),
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    child: (bindings) => lazyLogger(threshold, () => real().child(bindings)),
    // Without it a hot path cannot tell a line will be dropped, and builds it anyway (Call's
    // `call finished` line at the default level: ~1/3 of a native echo's main-thread profile).
    isLevelEnabled: (level) => Object.hasOwn(LEVELS, level) && LEVELS[level as LevelName] >= threshold,
  };
}

/** A pino logger on stderr; the level comes from `TOOLHOST_LOG` (default `warn`). */
export function createDefaultLogger(level = process.env.TOOLHOST_LOG ?? 'warn'): Logger {
  const make = (): Logger => {
    const pino = loadPino();
    return pino({ name: 'toolhost', level }, pino.destination({ fd: 2, sync: true }));
  };
  // A level pino does not know is refused now, by pino, as before.
  if (!Object.hasOwn(LEVELS, level)) return make();
  return lazyLogger(LEVELS[level as LevelName], make);
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
