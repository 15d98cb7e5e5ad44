/**
 * Which commands show progress (cli/progress.ts) and when: the ones that can take seconds — a transfer (`pull`,
 * `update`, `publish`), a build, a first load that transpiles (`list`, `call`, `inspect`) — from just before their
 * action runs until the command is over; never with `--json`.
 */
import type { Command } from 'commander';
import type { ProgressDisplay } from './progress.js';

const COMMANDS: ReadonlySet<string> = new Set(['pull', 'update', 'publish', 'build', 'list', 'call', 'inspect']);
let display: ProgressDisplay | undefined;

/** Start the display before each of those commands' action (the renderer loads only then). */
export function progressHook(root: Command): void {
  root.hook('preAction', async (_root, command) => {
    if (!COMMANDS.has(command.name())) return;
    display = await (await import('./progress.js')).showProgress({ json: command.opts<{ json?: boolean }>().json });
  });
}

/** Stop the display (its last lines stay); nothing when none started. */
export function stopProgress(): void {
  display?.stop();
  display = undefined;
}
