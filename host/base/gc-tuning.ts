/**
 * V8 settings of toolhost's own processes (the `toolhost` command, so `serve`,
 * and the sandbox process): allocation-site pretenuring is turned off.
 *
 * Why: a call makes a few dozen short-lived objects on the main thread (the
 * call, its context, sink, channel, task and handlers). Once a burst keeps
 * ~650 calls' objects alive across one scavenge (a warm-up, a queue that
 * fills), V8 marks those allocation sites "tenure" (`--trace-pretenuring-statistics`:
 * a dozen sites at 100 % survival in one scavenge) and from then on allocates
 * every call's objects in the old generation. Dead old objects are roots for
 * the scavenger until the next mark-compact, so each scavenge copies and
 * promotes what they point to: the main thread's scavenges promoted ~1.8 MB
 * each instead of ~0.66 MB and took 541 ms instead of 316 ms over a
 * 20,000-call row, and at 8 calls in flight the host's throughput fell
 * to 0.65-0.73x the bare pool's, against 0.77-1.12x with pretenuring off
 * (`toolhost bench echo --isolation call --concurrency 8 --paired-rounds 5`,
 * three runs each, alternated).
 *
 * Guarantees: set before any call runs, for the whole process (V8 flags are
 * per process: the worker threads get it too). Does not: reach a host
 * embedded in another program (the library does not change its embedder's
 * V8; such a program can start Node with `--no-allocation-site-pretenuring`);
 * change which objects live or what a call does, only where V8 first places
 * them.
 */
import { setFlagsFromString } from 'node:v8';

/** Turn allocation-site pretenuring off for this process (see the file comment). Call before the first call runs. */
export function tuneGarbageCollection(): void {
  setFlagsFromString('--no-allocation-site-pretenuring');
}
