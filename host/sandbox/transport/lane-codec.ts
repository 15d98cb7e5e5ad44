/**
 * How a call and its answer travel on a task lane (task-lanes.ts): as flat
 * arrays, not as the objects protocol.ts describes. Anything else (a
 * describe task, an error, a profile miss) travels as the object itself.
 *
 * Why: structured clone writes every property name of an object, and the
 * reading thread interns each name again and walks the map transitions to
 * rebuild it; a dense array is a length and its values. A call's task and
 * answer held 25 names in 4 objects. In a round trip to a worker over a
 * MessagePort, an answer shaped like a call's outcome cost ~2 µs more of the
 * main thread than a flat array with the same values (20 000 round trips,
 * 2-vCPU VM); deserializing answers was ~4 % of the main thread's samples at
 * 8 calls in flight (perf). With both directions flat, C echo at 8 in flight
 * went +12-24 % calls/s, all-thread CPU -4-10 µs a call (paired in one process).
 *
 * A call's control block lives in one of a few shared buffers (control-slots.ts).
 * A lane sends each buffer once, with the first call that uses it; later
 * calls name it by id. Why: a SharedArrayBuffer in a message costs both
 * threads at every post (a handle to it made and dropped on the sending side,
 * a new SharedArrayBuffer object on the receiving side): ~0.5 µs of the
 * main thread's postMessage and ~1 µs of a round trip (2-vCPU VM).
 */
import type { MessagePort } from 'node:worker_threads';
import type { CallProfile, CallWire, GuestCallContext, Isolation, LaneAnswer, RpcReply, TaskAnswer, TaskWire, WorkerAccounting, WorkerMessage } from '../protocol.js';

/** What a call carries only sometimes: in one object at the end of its message, when it has any. */
export type CallExtras = Pick<CallWire, 'fixed' | 'conversationKey' | 'env' | 'filesystem'> & Pick<GuestCallContext, 'conversationId' | 'sessionId' | 'agentName'>;

/**
 * A call: [taskId, control buffer (only the first time the lane carries it),
 * control buffer id, control offset, submittedAt, profile, args, callId, extras].
 */
export type CallMessage = [number, SharedArrayBuffer | undefined, number, number, number, number, string, string, CallExtras | undefined];

/** What a lane carries to a worker. */
export type LaneTask = CallMessage | Exclude<TaskWire, CallWire>;

/** A kick: the lane's ring holds a call, and the worker was waiting in its event loop (see task-ring.ts). */
export const LANE_KICK = 0;

/** What a lane's port carries to a worker: a task, a kick, or the answer to a host call. */
export type LaneMessage = LaneTask | typeof LANE_KICK | RpcReply;

/** Whether a message the worker received is a task (not a kick, not a host call's answer). */
export const isTask = (message: LaneMessage): message is LaneTask => Array.isArray(message) || (message !== LANE_KICK && 'kind' in message);

/** One of a task's events or host calls, as the lane's port carries it to the pool. */
export interface LaneEvent {
  taskId: number;
  event: WorkerMessage;
}

/**
 * What a worker posts on its `parentPort`, once, when it starts (nothing else
 * goes there): its end of the lane's port, its rings, its lane bell, the
 * host-call doorbell, and `status` (its spare-status block, which the
 * transport carries without reading).
 */
export interface LaneHello {
  toolhost: 'hello';
  threadId: number;
  port: MessagePort;
  doorbell: SharedArrayBuffer;
  bell: SharedArrayBuffer;
  ring: SharedArrayBuffer;
  answers: SharedArrayBuffer;
  status: SharedArrayBuffer;
}

export const isHello = (post: unknown): post is LaneHello => typeof post === 'object' && post !== null && (post as { toolhost?: unknown }).toolhost === 'hello';

const INSTANCES: ReadonlyArray<WorkerAccounting['instance']> = ['fresh', 'prewarmed', 'restored', 'reused'];
const ISOLATIONS: readonly Isolation[] = ['call', 'conversation', 'worker'];
const CPU_CLOCKS: ReadonlyArray<WorkerAccounting['cpuClock']> = ['thread', 'process', 'none'];

/**
 * A call's value and its accounting: [taskId, value, startedAt, instance,
 * isolation, instantiateMs, cpuMs, cpuClock, peakMemoryBytes, posted,
 * threadId, preparing, ranMs, keptEvicted] (the three names as their index in the lists above;
 * an absent number as undefined; preparing as 1 or 0). `posted`: the messages
 * the worker had posted on the lane's port before this answer, which is how an
 * answer that travels in the answer ring keeps its place (see host-end.ts).
 */
export type ValueMessage = [number, string, number, number, number, number, number | undefined, number, number | undefined, number, number, number, number | undefined, number | undefined];

/** What a lane carries back to the main thread: an answer, a task's event or host call, or a kick. */
export type LaneReply = ValueMessage | LaneAnswer | LaneEvent | typeof LANE_KICK;

/**
 * A task as `threadId`'s lane carries it. `sent`: the control buffers this
 * lane has carried so far (a buffer not in it goes along, and is added). The
 * call's profile goes along unless the worker is known to hold it.
 */
export function encodeTask(wire: TaskWire, sent: Set<number>, threadId = -1): LaneTask {
  if (wire.kind !== 'call') return wire;
  const { context } = wire;
  let extras: CallExtras | undefined;
  const extra = <K extends keyof CallExtras>(key: K, value: CallExtras[K] | undefined): void => {
    if (value !== undefined) (extras ??= {})[key] = value;
  };
  extra('fixed', wire.knownBy?.has(threadId) === true ? undefined : wire.fixed);
  extra('conversationKey', wire.conversationKey);
  extra('env', wire.env);
  extra('filesystem', wire.filesystem);
  extra('conversationId', context.conversationId);
  extra('sessionId', context.sessionId);
  extra('agentName', context.agentName);
  const { buffer, bufferId, offset } = wire.control;
  let carried: SharedArrayBuffer | undefined;
  if (!sent.has(bufferId)) {
    sent.add(bufferId);
    carried = buffer;
  }
  return [wire.taskId, carried, bufferId, offset, wire.submittedAt, wire.profile, wire.args, context.callId, extras];
}

/** The lane's call `message` introduced its control buffer (it is not known to have arrived if the post failed). */
export function carriesBuffer(message: LaneTask): number | undefined {
  return Array.isArray(message) && message[1] !== undefined ? message[2] : undefined;
}

/** A task as its worker runs it. `received`: the control buffers this lane has carried so far, by id (one a message carries is added). */
export function decodeTask(message: LaneTask, received: Map<number, SharedArrayBuffer>): TaskWire {
  if (!Array.isArray(message)) return message;
  const [taskId, carried, bufferId, offset, submittedAt, profile, args, callId, extras] = message;
  if (carried !== undefined) received.set(bufferId, carried);
  const buffer = received.get(bufferId);
  // A lane delivers in order: the message that carried a buffer came before any that names it.
  if (buffer === undefined) throw new Error(`task ${taskId} names control buffer ${bufferId}, which its lane never carried`);
  const context: GuestCallContext = { callId };
  const wire: CallWire = { kind: 'call', taskId, control: { buffer, bufferId, offset }, submittedAt, profile, args, context };
  if (extras === undefined) return wire;
  const { fixed, conversationKey, env, filesystem, conversationId, sessionId, agentName } = extras;
  if (fixed !== undefined) wire.fixed = fixed satisfies CallProfile;
  if (conversationKey !== undefined) wire.conversationKey = conversationKey;
  if (env !== undefined) wire.env = env;
  if (filesystem !== undefined) wire.filesystem = filesystem;
  if (conversationId !== undefined) context.conversationId = conversationId;
  if (sessionId !== undefined) context.sessionId = sessionId;
  if (agentName !== undefined) context.agentName = agentName;
  return wire;
}

/** `posted`: the messages the worker posted on the port before this answer (read by the pool for an answer in the ring only). */
export function encodeAnswer(taskId: number, answer: TaskAnswer, posted = 0): ValueMessage | LaneAnswer {
  // Content items (bytes) and a missing value travel as the whole answer, structured-cloned.
  if (!('ok' in answer) || !answer.ok || !('value' in answer) || answer.content !== undefined || answer.noValue === true) return { taskId, answer };
  const a = answer.accounting;
  return [taskId, answer.value, a.startedAt, INSTANCES.indexOf(a.instance), ISOLATIONS.indexOf(a.isolation), a.instantiateMs, a.cpuMs, CPU_CLOCKS.indexOf(a.cpuClock), a.peakMemoryBytes, posted, a.threadId, a.preparing === true ? 1 : 0, a.ranMs, a.keptEvicted];
}

export function decodeAnswer(reply: ValueMessage | LaneAnswer): LaneAnswer {
  if (!Array.isArray(reply)) return reply;
  const [taskId, value, startedAt, instance, isolation, instantiateMs, cpuMs, cpuClock, peakMemoryBytes, , threadId, preparing, ranMs, keptEvicted] = reply;
  const accounting: WorkerAccounting = { startedAt, instance: INSTANCES[instance]!, isolation: ISOLATIONS[isolation]!, instantiateMs, cpuClock: CPU_CLOCKS[cpuClock]!, threadId };
  if (cpuMs !== undefined) accounting.cpuMs = cpuMs;
  if (peakMemoryBytes !== undefined) accounting.peakMemoryBytes = peakMemoryBytes;
  if (preparing === 1) accounting.preparing = true;
  if (ranMs !== undefined) accounting.ranMs = ranMs;
  if (keptEvicted !== undefined) accounting.keptEvicted = keptEvicted;
  return { taskId, answer: { ok: true, value, accounting } };
}
