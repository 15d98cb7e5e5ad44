/** The checks of command-line values the `toolhost` command shares (main.ts): JSON, worktrees, ports, byte counts. */
import { statSync } from 'node:fs';
import { InvalidArgumentError } from 'commander';
import { UsageError } from './usage-error.js';

/** A JSON option's value (`--args`, `--policy`), or a usage error naming the option. */
export function parseJsonOption(value: string, option: string): unknown {
  try {
    return JSON.parse(value) as unknown;
  } catch (error) {
    throw new UsageError(`${option} must be JSON: ${(error as Error).message}`);
  }
}

/** `--worktree DIR`: an existing directory. */
export function checkWorktree(dir: string): void {
  let isDirectory = false;
  try {
    isDirectory = statSync(dir).isDirectory();
  } catch {
    isDirectory = false;
  }
  if (!isDirectory) throw new UsageError(`--worktree must name an existing directory: ${dir}`);
}

/** A port number option (0-65535). */
export function parsePort(value: string): number {
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new InvalidArgumentError('must be a port number (0-65535)');
  return port;
}

/** A byte-count option (1 KiB to 256 MiB). */
export function parseBytes(value: string): number {
  const bytes = Number(value);
  if (!Number.isInteger(bytes) || bytes < 1024 || bytes > 268_435_456) throw new InvalidArgumentError('must be a number of bytes from 1024 to 268435456');
  return bytes;
}
