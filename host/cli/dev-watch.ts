/**
 * What `toolhost dev` watches and when it rebuilds: a chokidar watcher on the project's sources feeding a rebuild
 * queue.
 *
 * Guaranteed:
 * - An atomic save (an editor or `sed -i` writing a temp file and renaming it over the source) is seen, and so is
 *   every later save of that file: chokidar watches directories, not the inode a recursive `fs.watch` on Node 20
 *   lost after the first rename-over. New files, deletions and renames are seen too.
 * - Editors' swap and backup files (`.x.swp`, `x~`, `#x#`, `.#x`, vim's `4913`, `sed -i`'s `sedXXXXXX`) and the
 *   project's `node_modules`, `dist` and `.git` never trigger a rebuild.
 * - At most one build runs at a time; a change during a build (the first one included: the watcher is ready before
 *   it starts) queues exactly one more build after it, which sees the change. Each build is told why it runs:
 *   the changes since the last one, e.g. `changed src/index.ts`.
 * Not guaranteed: that a change made less than the debounce (100 ms) before another is reported separately —
 * bursts are merged into one build.
 */
import { basename, relative, sep } from 'node:path';
import { watch, type FSWatcher } from 'chokidar';

/** Directories of a project that are never sources. */
const IGNORED_DIRS = ['node_modules', 'dist', '.git'];

/** Names editors and tools write next to a file while saving it. */
const SCRATCH_FILE = [/\.sw[a-p]$/, /~$/, /^#.*#$/, /^\.#/, /^4913$/, /^sed[A-Za-z0-9]{6}$/, /\.tmp$/, /^\.~lock\./];

/** Whether `path` (inside `root`) is something a rebuild never depends on. */
export function ignoredPath(root: string, path: string): boolean {
  const rel = relative(root, path);
  if (rel === '' || rel.startsWith('..')) return false;
  if (rel.split(sep).some((part) => IGNORED_DIRS.includes(part))) return true;
  const name = basename(rel);
  return SCRATCH_FILE.some((pattern) => pattern.test(name));
}

export type BuildOutcome = 'built' | 'failed';

export interface RebuildQueueOptions {
  /** Runs one build; `reasons` says why (e.g. `['changed src/index.ts']`, `['first build']`). */
  build: (reasons: string[]) => Promise<BuildOutcome>;
  /** How long to wait for a burst of changes to end before building (default 100 ms). */
  debounceMs?: number;
}

/**
 * One build at a time; changes during a build are kept, with their reasons, for exactly one more. A queue starts
 * held: changes recorded before `start()` (during the first build) wait for it.
 */
export class RebuildQueue {
  readonly #build: (reasons: string[]) => Promise<BuildOutcome>;
  readonly #debounceMs: number;
  #pending: string[] = [];
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #held = true;
  #closed = false;

  constructor(options: RebuildQueueOptions) {
    this.#build = options.build;
    this.#debounceMs = options.debounceMs ?? 100;
  }

  /** Record a change; a build follows after the debounce, or after the running build. */
  changed(reason: string): void {
    if (this.#closed) return;
    if (!this.#pending.includes(reason)) this.#pending.push(reason);
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#kick();
    }, this.#debounceMs);
  }

  /** Let builds run (changes recorded so far build at once). */
  start(): void {
    this.#held = false;
    if (this.#timer === undefined) this.#kick();
  }

  /** Resolves when no build is running (one may still wait for its debounce). */
  async idle(): Promise<void> {
    while (this.#running !== undefined) await this.#running;
  }

  close(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
  }

  #kick(): void {
    if (this.#held || this.#closed || this.#running !== undefined || this.#pending.length === 0) return;
    const reasons = this.#pending;
    this.#pending = [];
    this.#running = this.#build(reasons)
      .then(() => undefined, () => undefined)
      .finally(() => {
        this.#running = undefined;
        // Changes that arrived during the build, whose debounce already ended: one more build now.
        if (this.#timer === undefined) this.#kick();
      });
  }
}

const VERBS: Record<string, string> = { add: 'added', change: 'changed', unlink: 'removed', addDir: 'added', unlinkDir: 'removed' };

/**
 * Watch `dir`'s sources, calling `onChange('changed src/index.ts')` for each change; resolves once the watcher
 * is ready (has read the tree), so nothing saved after it returns is missed.
 */
export async function watchSources(dir: string, onChange: (reason: string) => void): Promise<FSWatcher> {
  const watcher = watch(dir, {
    ignoreInitial: true,
    // A delete followed by an add within 100 ms is one `change` (an atomic save), not two events.
    atomic: true,
    ignored: (path: string) => ignoredPath(dir, path),
  });
  watcher.on('all', (event, path) => {
    onChange(`${VERBS[event] ?? event} ${relative(dir, path) || '.'}`);
  });
  await new Promise<void>((resolveReady, rejectReady) => {
    watcher.once('ready', () => resolveReady());
    watcher.once('error', (error) => rejectReady(error instanceof Error ? error : new Error(String(error))));
  });
  return watcher;
}

/** `changed src/index.ts` or `changed src/a.ts and 2 more`. */
export function describeReasons(reasons: readonly string[]): string {
  if (reasons.length <= 2) return reasons.join(', ');
  return `${reasons.slice(0, 2).join(', ')} and ${reasons.length - 2} more`;
}
