/**
 * Progress of long operations (a pull's transfer, a publish, a build's
 * stages, a component's first transpile), published on one
 * `node:diagnostics_channel` channel, `toolhost:progress`. Whoever wants to show
 * it subscribes (the CLI on a terminal: cli/progress.ts); nobody subscribed,
 * publishing costs one check. The operations never wait on a subscriber and
 * never see what it does with an event.
 *
 * Events are plain data naming a `task` (a source, a file), so an embedder can
 * subscribe too: `diagnostics_channel.subscribe('toolhost:progress', fn)`.
 */
import { channel } from 'node:diagnostics_channel';

/** One progress event. */
export type ProgressEvent =
  /** A stage of `task` starts (the previous stage of that task, if any, is over). */
  | { kind: 'stage'; task: string; stage: string }
  /** Bytes of `task` moved so far, of `total` (0: unknown). */
  | { kind: 'bytes'; task: string; stage: string; done: number; total: number }
  /** `task` is over (`ok`: it succeeded); its last stage with it. */
  | { kind: 'end'; task: string; ok: boolean };

/** The channel's name. */
export const PROGRESS_CHANNEL = 'toolhost:progress';

const progress = channel(PROGRESS_CHANNEL);

/** Publish `event` when someone listens. */
export function reportProgress(event: ProgressEvent): void {
  if (progress.hasSubscribers) progress.publish(event);
}

/** Whether anyone listens (to skip work that only feeds progress). */
export function progressWanted(): boolean {
  return progress.hasSubscribers;
}
