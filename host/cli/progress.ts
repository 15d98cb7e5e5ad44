/**
 * The CLI's progress display: on a terminal (stderr a TTY, no `--json`, and
 * TOOLHOST_PROGRESS not `0`), what the operations report on the progress
 * channel (base/progress.ts) drawn with cli-progress on stderr — one line per
 * task: a bar with bytes, total and rate for a transfer, the stage and its
 * elapsed time otherwise, and a closing line (`✓`/`✗`, how long, the rate).
 * Anywhere else it draws nothing and stdout is never touched: scripts and
 * `--json` see exactly what they saw before.
 *
 * A task is drawn live once it has lasted `QUIET_MS` (or at once when bytes
 * move); a quicker one leaves only its closing line. Work that finds its result
 * cached (a component in the store, a transpiled one) reports no stage at all.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import type { GenericFormatter, MultiBar, SingleBar } from 'cli-progress';
import { PROGRESS_CHANNEL, type ProgressEvent } from '../base/progress.js';

/** A display to stop (idempotent) when the command is over. */
export interface ProgressDisplay {
  stop(): void;
}

const NOTHING: ProgressDisplay = { stop: () => undefined };
/** A task quicker than this, without bytes, is not drawn at all. */
const QUIET_MS = 300;

/** Bytes as a person reads them. */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}

const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;

/** Where a task is: its stage, and for a transfer its bytes. */
interface Task {
  label: string;
  stage: string;
  startedAt: number;
  /** When its transfer started (its rate counts from there), and when it was complete. */
  bytesAt?: number;
  bytesEndAt?: number;
  done: number;
  total: number;
  end?: { ok: boolean; at: number };
  bar?: SingleBar;
}

/** The line of one task (cli-progress calls it at each redraw: the elapsed time moves on a stalled transfer too). */
function line(task: Task, bar: (progress: number) => string): string {
  const now = task.end?.at ?? Date.now();
  const elapsed = seconds(now - task.startedAt);
  const mark = task.end === undefined ? ' ' : task.end.ok ? '✓' : '✗';
  if (task.bytesAt !== undefined) {
    const rate = `${formatBytes(task.done / Math.max(0.001, ((task.bytesEndAt ?? now) - task.bytesAt) / 1000))}/s`;
    const progress = task.total > 0 ? Math.min(1, task.done / task.total) : 0;
    if (task.end !== undefined) return `${mark} ${task.label} [${bar(progress)}] ${formatBytes(task.done)} in ${elapsed} (${rate})${task.end.ok ? '' : ', failed'}`;
    const amount = task.total > 0 ? `${formatBytes(task.done)}/${formatBytes(task.total)}` : formatBytes(task.done);
    return `${mark} ${task.label} [${bar(progress)}] ${Math.floor(progress * 100)}% ${amount} ${rate}`;
  }
  if (task.end !== undefined) return `${mark} ${task.label} ${task.stage}: ${task.end.ok ? 'done' : 'failed'} in ${elapsed}`;
  return `${mark} ${task.label} ${task.stage}… ${elapsed}`;
}

/** Shorten a long task name (a registry URL, a path) from the left, to `width` characters. */
function label(task: string, width: number): string {
  const plain = task.replace(/^"|"$/g, '');
  return plain.length <= width ? plain : `…${plain.slice(-(width - 1))}`;
}

/**
 * Show the progress of what runs until `stop()`, when stderr is a terminal and `json` is not set; else nothing
 * (and nothing subscribes, so the operations skip the reporting).
 */
export async function showProgress(options: { json?: boolean | undefined } = {}, stream: NodeJS.WriteStream = process.stderr): Promise<ProgressDisplay> {
  if (options.json === true || stream.isTTY !== true || process.env.TOOLHOST_PROGRESS === '0') return NOTHING;
  const { default: progress } = await import('cli-progress');
  const tasks = new Map<string, Task>();
  let bars: MultiBar | undefined;
  let pending: NodeJS.Timeout | undefined;

  const format: GenericFormatter = (barOptions, _params, payload: { task?: Task }) => payload.task === undefined ? '' : line(payload.task, (value) => progress.Format.BarFormat(value, barOptions));
  const draw = (task: Task): void => {
    if (task.bar !== undefined) {
      task.bar.update(0, { task });
      return;
    }
    bars ??= new progress.MultiBar({ stream, format, barsize: 16, hideCursor: false, gracefulExit: false, clearOnComplete: false, fps: 8, linewrap: false });
    task.bar = bars.create(1, 0, { task });
  };
  const settle = (): void => {
    if ([...tasks.values()].some((task) => task.end === undefined)) return;
    bars?.stop();
    bars = undefined;
    tasks.clear();
  };
  // A task is drawn once it has lasted QUIET_MS, or at once when bytes move.
  const later = (): void => {
    pending ??= setTimeout(() => {
      pending = undefined;
      for (const task of tasks.values()) if (task.bar === undefined && task.end === undefined) draw(task);
    }, QUIET_MS).unref();
  };

  const onEvent = (message: unknown): void => {
    const event = message as ProgressEvent;
    let task = tasks.get(event.task);
    if (event.kind === 'end') {
      if (task === undefined) return;
      task.end = { ok: event.ok, at: Date.now() };
      // A quick task leaves its closing line too (it had a stage: a transfer, a transpile, a build step).
      draw(task);
      task.bar?.stop();
      settle();
      return;
    }
    if (task === undefined || task.end !== undefined) {
      task = { label: label(event.task, Math.max(16, (stream.columns || 80) - 56)), stage: event.stage, startedAt: Date.now(), done: 0, total: 0 };
      tasks.set(event.task, task);
    }
    task.stage = event.stage;
    if (event.kind === 'bytes') {
      task.bytesAt ??= Date.now();
      task.done = event.done;
      task.total = event.total;
      if (event.total > 0 && event.done >= event.total) task.bytesEndAt ??= Date.now();
      draw(task);
    } else if (task.bar !== undefined) {
      draw(task);
    } else {
      later();
    }
  };
  subscribe(PROGRESS_CHANNEL, onEvent);
  let stopped = false;
  return {
    stop(): void {
      if (stopped) return;
      stopped = true;
      unsubscribe(PROGRESS_CHANNEL, onEvent);
      if (pending !== undefined) clearTimeout(pending);
      bars?.stop();
    },
  };
}
