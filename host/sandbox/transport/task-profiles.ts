/**
 * The pool's side of call profiles (see CallProfile in protocol.ts): what
 * every call of one tool shares (component, cap, module URL, tool,
 * isolation, limits, network label, input schema) is given an id and posted to each worker
 * once; later calls carry only the id and what changes per call. Serialising
 * the whole task cost the main thread and the worker several µs per call.
 *
 * The pool sends the profile along until every worker it knows has answered
 * a task that carried it; a worker that gets an id it does not know (a new
 * worker, or one that dropped its profiles) answers a ProfileMiss and the
 * pool sends the task again with the profile.
 */
import { ComponentHomes, type ComponentHome } from '../component-homes.js';
import type { CallProfile, CallTask, CallWire, ControlRef } from '../protocol.js';

/** Profiles kept before the table starts over (ids are never reused, so workers never mistake one). */
const MAX_PROFILES = 4096;

export interface ProfileEntry {
  id: number;
  profile: CallProfile;
  /** Workers (thread ids) known to hold the profile. */
  knownBy: Set<number>;
  /** The workers that hold its component's instances (component-homes.ts). */
  home: ComponentHome;
  /** How long its calls take in a worker, from the task's start there to its answer (ms, moving average of WorkerAccounting.ranMs; undefined before the first). */
  runMs?: number;
}

/** Weight of the newest run in `runMs`. */
const RUN_WEIGHT = 0.2;

/** One more run of a profile's calls took `ms`. */
export function recordRun(entry: ProfileEntry, ms: number): void {
  entry.runMs = entry.runMs === undefined ? ms : entry.runMs + RUN_WEIGHT * (ms - entry.runMs);
}

/** A call task as the pool is given it. */
export type CallInput = Omit<CallTask, 'taskId' | 'control' | 'submittedAt'>;

type Network = CallInput['capabilities']['network'];

/** Entries remembered per limits object (calls of one tool that vary their memory cap or network label have several; more are found by key). */
const MEMO_PER_LIMITS = 8;

export class TaskProfiles {
  readonly #byKey = new Map<string, ProfileEntry>();
  /** Which workers hold each component's instances: one home per component and cap, shared by its profiles. */
  readonly homes = new ComponentHomes();
  /**
   * The entries found for a limits object: a tool passes the same one with
   * every call, so its entry is found by comparing a few fields instead of
   * building the whole key (a string of ~200 characters per call).
   */
  #byLimits = new WeakMap<CallInput['limits'], ProfileEntry[]>();
  #nextId = 1;

  /** The profile entry of a call (made the first time). */
  entry(input: CallInput): ProfileEntry {
    const { limits } = input;
    const network = input.capabilities.network;
    const seen = this.#byLimits.get(limits);
    if (seen) {
      for (const entry of seen) if (sameProfile(entry.profile, input, network)) return entry;
    }
    const entry = this.#byKeyEntry(input, network);
    if (!seen) this.#byLimits.set(limits, [entry]);
    else if (seen.length < MEMO_PER_LIMITS) seen.push(entry);
    return entry;
  }

  #byKeyEntry(input: CallInput, network: Network): ProfileEntry {
    const { limits } = input;
    const key = `${input.componentId}\n${input.memoryMb}\n${input.tool}\n${input.isolation}\n${network}\n${limits.stdioBytes}/${limits.maxEvents}/${limits.maxEventBytes}/${limits.maxResultBytes}/${limits.maxHostCalls}/${limits.maxHandles}\n${input.argsSchema?.hash ?? ''}\n${input.moduleUrl}\n${limits.clientRequests === undefined ? '' : JSON.stringify(limits.clientRequests)}`;
    let entry = this.#byKey.get(key);
    if (!entry) {
      if (this.#byKey.size >= MAX_PROFILES) {
        this.#byKey.clear();
        this.#byLimits = new WeakMap();
        this.homes.clear();
      }
      const profile: CallProfile = { componentId: input.componentId, memoryMb: input.memoryMb, moduleUrl: input.moduleUrl, tool: input.tool, isolation: input.isolation, limits: { ...limits }, network };
      if (input.argsSchema !== undefined) profile.argsSchema = input.argsSchema;
      entry = { id: this.#nextId++, profile, knownBy: new Set(), home: this.homes.of(input.componentId, input.memoryMb) };
      this.#byKey.set(key, entry);
    }
    return entry;
  }

  /** A worker is gone: no profile counts it any more (else hostile calls that kill workers grow every set). */
  forget(threadId: number): void {
    for (const entry of this.#byKey.values()) entry.knownBy.delete(threadId);
    this.homes.forget(threadId);
  }

  /**
   * The message for a call. The profile goes along unless every worker in
   * `workers` (the live ones) is known to hold it.
   */
  wire(input: CallInput, entry: ProfileEntry, task: { taskId: number; control: ControlRef; submittedAt: number }, workers: Iterable<number>): CallWire {
    const wire: CallWire = { kind: 'call', taskId: task.taskId, control: task.control, submittedAt: task.submittedAt, profile: entry.id, args: input.args, context: input.context };
    if (input.conversationKey !== undefined) wire.conversationKey = input.conversationKey;
    const { env, filesystem } = input.capabilities;
    if (env.length > 0) wire.env = env;
    if (filesystem) wire.filesystem = filesystem;
    if (!knownByAll(entry, workers)) {
      wire.fixed = entry.profile;
      wire.knownBy = entry.knownBy;
    }
    return wire;
  }
}

/** Whether `profile` is the one of a call with `input` (its limits are the same object; see TaskProfiles.#byLimits). */
function sameProfile(profile: CallProfile, input: CallInput, network: Network): boolean {
  return profile.componentId === input.componentId && profile.memoryMb === input.memoryMb && profile.tool === input.tool && profile.isolation === input.isolation && profile.network === network && profile.moduleUrl === input.moduleUrl && profile.argsSchema?.hash === input.argsSchema?.hash;
}

function knownByAll(entry: ProfileEntry, workers: Iterable<number>): boolean {
  if (entry.knownBy.size === 0) return false;
  for (const threadId of workers) if (!entry.knownBy.has(threadId)) return false;
  return true;
}
