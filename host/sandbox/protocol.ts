/**
 * Messages between the main thread and the sandbox workers.
 *
 * A task travels on its worker's task lane (see task-lanes.ts) with an id and
 * its control block (a slot of a SharedArrayBuffer the pool reuses: posting a
 * new SharedArrayBuffer cost more than the rest of a small task). A call
 * task carries what changes per call; what is the same for every call of one tool under one cap, isolation,
 * limits and network label (its profile) goes to each worker once.
 * Nothing else is made per task: each worker has one persistent, ordered,
 * two-way channel, its lane, opened when the worker starts (its hello is the
 * only message on its `parentPort`). The lane carries tasks in, their
 * events and host calls out, host calls' answers in, and answers out; how
 * (ports, shared-memory rings, kicks, doorbells) is the transport's alone
 * (transport/host-end.ts, transport/worker-end.ts).
 * Each worker also shares one status block with the main thread (sent in its
 * hello): whether it is preparing a spare instance, and since when. The task
 * dispatch (task-dispatch.ts) and the spare watchdog read it; nothing is posted when a spare is
 * done (a message per call cost the main thread a wake-up per call).
 * The control block holds the cooperative cancel flag the guest reads with
 * `cancelled()`, the task's claim, and what the CPU watchdog needs once the
 * guest starts (its thread and CPU reading).
 */
import type { ToolErrorData } from '../base/errors.js';
import type { ClientAllowances, ClientRefusal, ClientRequestKind } from '../core/client-requests.js';
import type { LogLevel } from '../core/events.js';
import type { WorkerHeap } from '../core/registry-types.js';
import type { NetworkLabel } from '../policy/labels.js';
import type { SchemaLimits } from '../core/schema-limits.js';
import type { GuestHttpRequest } from './wasi/http.js';

/** Int32 slots of the control block. */
export const CONTROL_CANCELLED = 0;
/** (Int32 slot 1 is free: the host-call doorbell is the lane's now, see transport/worker-end.ts.) */
/** 1 once the guest is about to run (the slots below are then written). */
export const CONTROL_STARTED = 2;
/** The kernel thread id of the guest's thread, or 0 without a per-thread CPU clock. */
export const CONTROL_TID = 3;
/** Float64 slots of the control block (after the Int32 ones). */
export const CONTROL_F64_CPU_START_MS = 2;
export const CONTROL_F64_STARTED_AT = 3;
/** The CPU time the guest used, written when it returned (before its answer is posted). */
export const CONTROL_F64_CPU_USED_MS = 4;
/**
 * Int32 slot (after the Float64 ones): 1 once the guest returned. The CPU
 * watchdog then stops looking: what the worker's thread does after the guest
 * (posting the answer, making the next spare) is not the call's to pay, and
 * the main thread may read the clock late.
 */
export const CONTROL_ENDED = 10;
/**
 * Int32 slot: who has the task. A task may wait in a worker's port behind
 * another one (the pool hands a busy worker its next task when both are
 * short, see pool.ts), so taking it back must not race the worker: the
 * worker claims it (CLAIM_WAITING to CLAIM_TAKEN) before it does anything,
 * and the pool abandons it (CLAIM_WAITING to CLAIM_ABANDONED) when its
 * caller stops it first; the worker then answers TaskAbandoned at once. A
 * claimed task ends as CLAIM_DONE (worker) or CLAIM_KILLED (pool), whichever
 * comes first.
 */
export const CONTROL_CLAIM = 11;
export const CLAIM_WAITING = 0;
export const CLAIM_TAKEN = 1;
export const CLAIM_ABANDONED = 2;
/** The worker is done with the task (its answer follows): a stop no longer needs its worker stopped. */
export const CLAIM_DONE = 3;
/**
 * The pool is stopping the worker for this task: it must not finish it and
 * claim the next one (that one would die with it); a worker that finds this
 * when it is done waits for its end.
 */
export const CLAIM_KILLED = 4;
export const CONTROL_BYTES = 6 * Float64Array.BYTES_PER_ELEMENT;

/**
 * Where a task's control block is: a CONTROL_BYTES slot at `offset` in
 * `buffer` (see control-slots.ts). `bufferId` names the buffer on a task
 * lane, which sends each buffer to its worker once (see lane-codec.ts).
 */
export interface ControlRef {
  buffer: SharedArrayBuffer;
  bufferId: number;
  offset: number;
}

/** Int32 slot of a worker's status block: spare preparations announced and not finished (more than 0: busy). */
export const STATUS_PREPARING = 0;
/** Int32 slot: the task whose answer announced the preparation running now (or last). */
export const STATUS_PREPARING_TASK = 1;
/**
 * Int32 slot: 1 while a preparation runs (guest code: the spare's
 * initialization), 0 otherwise. Only a running preparation is timed: an
 * announced one may wait behind a call the worker runs first, which has its
 * own budgets.
 */
export const STATUS_PREPARING_RUNNING = 2;
/**
 * Int32 slot: of the announced preparations, those expected to be quick (a
 * used instance reset to its snapshot: a memcpy, shorter than waking a
 * sleeping worker), which do not keep calls away from the worker.
 */
export const STATUS_PREPARING_QUICK = 3;
/** Float64 slot: when the preparation running now started (epoch ms); written before the running flag is raised. */
export const STATUS_F64_PREPARING_SINCE = 2;
export const STATUS_BYTES = 3 * Float64Array.BYTES_PER_ELEMENT;

/** The call identity the guest sees through `context()`. */
export interface GuestCallContext {
  callId: string;
  conversationId?: string;
  sessionId?: string;
  agentName?: string;
}

/**
 * How long an instance lives: `call` (a fresh instance per call), `conversation`
 * (reused by the calls of one conversation on the same worker), `worker`
 * (reused by every call on the same worker).
 */
export type Isolation = 'call' | 'conversation' | 'worker';

interface TaskBase {
  /** The component's content hash. */
  componentId: string;
  /** The cap on the guest's linear memory, in MiB (its core modules are compiled with that maximum). */
  memoryMb: number;
  /** file: URL of the transpiled component's JS (instantiation mode). */
  moduleUrl: string;
  /** Names the task in the worker's messages (unique in the pool). */
  taskId: number;
  control: ControlRef;
  /** When the main thread submitted the task (epoch ms, sub-ms precision). */
  submittedAt: number;
}

/** What the capability layer gives one call's guest (from the resolved policy). */
export interface GuestCapabilities {
  /** The environment, as `wasi:cli/environment` hands it over. */
  env: Array<[string, string]>;
  /** The worktree, preopened at `/worktree`. */
  filesystem?: { root: string; readOnly: boolean };
  /** The network label (outgoing HTTP is checked on the main thread; sockets only under FULL_ACCESS). */
  network: NetworkLabel;
}

/** A tool's input schema (JSON text) and limits, as the worker compiles it (worker/args-check.ts; `hash`: of both, its cache key). */
export interface ArgsSchema { hash: string; text: string; limits: SchemaLimits }

export interface CallTask extends TaskBase {
  kind: 'call';
  capabilities: GuestCapabilities;
  tool: string;
  /** The input schema the worker checks `args` against before the guest runs (absent: none). */
  argsSchema?: ArgsSchema;
  args: string;
  context: GuestCallContext;
  /**
   * In `conversation` isolation, the key the conversation's instance is kept
   * under: the conversation scoped to the call's principal (see core/state.ts
   * `conversationScope`), so two principals naming one conversation get two instances.
   */
  conversationKey?: string;
  isolation: Isolation;
  limits: GuestOutputLimits;
}

export interface DescribeTask extends TaskBase {
  kind: 'describe';
  /** Check that each tool's schemas compile, within these limits, before answering (worker/args-check.ts). */
  schemaLimits?: SchemaLimits;
  /**
   * An instance made ahead for calls (a second home, see ../component-homes.ts), not a load's describe:
   * the worker keeps it as the component's spare and answers with no tools.
   */
  warm?: true;
}

export type SandboxTask = CallTask | DescribeTask;

/** What every call of one tool shares under one memory cap, isolation, limits and network label. */
export interface CallProfile {
  componentId: string;
  memoryMb: number;
  moduleUrl: string;
  tool: string;
  isolation: Isolation;
  limits: GuestOutputLimits;
  network: NetworkLabel;
  argsSchema?: ArgsSchema;
}

/**
 * A call task as posted to a worker: its profile by id, and the profile
 * itself (`fixed`) until the pool knows the worker has it. A worker that
 * does not know the id answers `ProfileMiss`, and the pool sends it again with the profile.
 */
export interface CallWire {
  kind: 'call';
  taskId: number;
  control: ControlRef;
  submittedAt: number;
  profile: number;
  fixed?: CallProfile;
  /**
   * The pool's own (never sent): workers known to hold the profile. The lane
   * leaves `fixed` out for them: in `worker` isolation at concurrency 1 every
   * call went to one worker, the other never learned the profile, and each
   * call carried it (a post instead of the task ring, ~100 bytes more to clone).
   */
  knownBy?: ReadonlySet<number>;
  args: string;
  context: GuestCallContext;
  conversationKey?: string;
  /** The call's environment and worktree, when it has them (most calls have neither). */
  env?: Array<[string, string]>;
  filesystem?: { root: string; readOnly: boolean };
}

/** What is posted to a worker for a task. */
export type TaskWire = CallWire | DescribeTask;

/** What a worker answers to a call or describe task. */
export type TaskAnswer = WorkerOutcome | ProfileMiss | TaskAbandoned;

/** What a worker posts on its task lane: a task's answer, or what its task threw (the worker's bug, never the guest's). */
export type LaneAnswer = { taskId: number; answer: TaskAnswer } | { taskId: number; error: string };

/** A worker's answer to a call whose profile it does not know (nothing ran). */
export interface ProfileMiss {
  profileMiss: number;
}

/** A worker's answer to a task the pool abandoned before the worker claimed it (nothing ran). */
export interface TaskAbandoned {
  abandoned: number;
}

/**
 * A forced garbage collection of one worker (measurements only, see
 * worker/heap.ts): one per worker at once, each waiting at `barrier` (an
 * Int32 arrival count) until `workers` have arrived.
 */
export interface CollectTask {
  kind: 'collect';
  barrier: SharedArrayBuffer;
  workers: number;
}


/** Caps on what one call may send back. */
export interface GuestOutputLimits {
  /** Bytes of stdout plus stderr kept per call; output past it is dropped (and said so). */
  stdioBytes: number;
  /** Events (progress, delta, log) per call; one more ends the call with OUTPUT_LIMIT_EXCEEDED. */
  maxEvents: number;
  /** Bytes of event payloads per call; past it the call ends with OUTPUT_LIMIT_EXCEEDED. */
  maxEventBytes: number;
  /** Bytes of the result; a larger result ends the call with OUTPUT_LIMIT_EXCEEDED. */
  maxResultBytes: number;
  /**
   * Host calls that need the main thread (get-state, set-state, outgoing HTTP)
   * per call; past it they are refused in the worker (nothing more reaches the
   * main thread) and the call ends with OUTPUT_LIMIT_EXCEEDED.
   */
  maxHostCalls: number;
  /**
   * Resource handles (WASI pollables, streams, descriptors, HTTP fields and
   * bodies...) the instance serving the call may hold at once; opening one
   * more ends the call with OUTPUT_LIMIT_EXCEEDED (counted in the glue, see
   * glue-patch.ts: handles the guest dropped or handed back do not count).
   */
  maxHandles: number;
  /**
   * What the call's tool may ask its caller (its grant, `client_request_bytes`):
   * the worker refuses the rest itself, and converts and size-checks what it
   * sends (worker/client-requests.ts). Absent: the worker decides nothing and
   * only caps the size at DEFAULT_CLIENT_REQUEST_BYTES.
   */
  clientRequests?: ClientAllowances;
}

export const DEFAULT_GUEST_OUTPUT_LIMITS: GuestOutputLimits = {
  stdioBytes: 64 * 1024,
  maxEvents: 10_000,
  maxEventBytes: 16 * 1024 * 1024,
  maxResultBytes: 16 * 1024 * 1024,
  maxHostCalls: 10_000,
  maxHandles: 100_000,
};

/** Worker → main, while the guest runs. */
export type WorkerMessage =
  | { type: 'progress'; pct?: number; message?: string }
  | { type: 'delta'; data: string }
  | { type: 'log'; level: LogLevel; message: string; source: 'guest' | 'stdout' | 'stderr' }
  | { type: 'rpc'; id: number; request: RpcRequest }
  /** Once per call, when the guest went past one of its limits in the worker (`limit`: the limit's config key). */
  | { type: 'limit'; limit: string; message: string; max: number }
  /** A request to the client the worker refused by itself (see GuestOutputLimits.clientRequests): audited and counted on the main thread. */
  | { type: 'client-refused'; kind: ClientRequestKind; reason: ClientRefusal; bytes?: number; /** A round refused before it was counted. */ uncounted?: true }
  /**
   * A describe task's guest code is about to run (its instantiation, then describe()): the load's
   * budget starts here, so time queued for a worker or spent starting one is not charged to the guest.
   */
  | { type: 'guest-starting' };

export type RpcRequest =
  | { op: 'modules'; componentId: string; memoryMb: number }
  | { op: 'get-state'; key: string }
  | { op: 'set-state'; key: string; value: string }
  | { op: 'http'; request: GuestHttpRequest }
  /**
   * MCP `sampling/createMessage` / `elicitation/create` parameters as JSON
   * text, made from the guest's request and size-checked in the worker; the
   * main thread checks the grant and the caller before it reads the text,
   * and its size before it parses it (core/call/client-gate.ts).
   */
  | { op: 'sample'; request: string }
  | { op: 'elicit'; request: string }
  /**
   * A 0.3.0 guest's round (`ask`): its requests' kinds in order (checked before the text is read) and the
   * round as JSON text (`{"requests":[{key, method, params}]}`), made and size-checked in the worker.
   */
  | { op: 'ask'; kinds: ClientRequestKind[]; request: string };

/** Main → worker, a host call's answer on the worker's lane, read synchronously by the worker. */
export type RpcReply = { id: number; ok: true; value: unknown } | { id: number; ok: false; error: string };

/** The compiled core modules of a component, by the file name jco's glue asks for. */
export type CoreModules = Array<[string, WebAssembly.Module]>;

export { DEFAULT_IDLE_RELEASE_MS, DEFAULT_KEPT_INSTANCE_MB, DEFAULT_MEMORY_BUDGET_MB, type SandboxWorkerData } from './worker-data.js';

/** What the worker measured about one task. */
export interface WorkerAccounting {
  /** When the worker started the task (epoch ms). */
  startedAt: number;
  /**
   * How long the task took in the worker, from its start to its answer (ms;
   * calls only). The pool's view of how long a tool's calls run: timed on
   * the main thread, it also counted how late the main thread read the
   * answer (a 5 ms scavenge made a 30 µs call look like 5 ms).
   */
  ranMs?: number;
  instance: 'fresh' | 'prewarmed' | 'restored' | 'reused';
  isolation: Isolation;
  instantiateMs: number;
  cpuMs?: number;
  cpuClock: 'thread' | 'process' | 'none';
  /** Linear memory of the instance after the call (memory only grows: its peak), in bytes. */
  peakMemoryBytes?: number;
  /** The worker thread that ran the task. */
  threadId: number;
  /**
   * The worker prepares the next call's instance after answering (its status
   * block says so until it is done): the pool sends calls to other idle workers meanwhile.
   */
  preparing?: boolean;
  /** Time the task waited for a worker (filled in by the pool). */
  queuedMs?: number;
  /** Instances kept for other conversations that keeping this call's dropped (the worker's kept-instance budget). */
  keptEvicted?: number;
  /** Components whose instances (spares, snapshots, kept) the worker dropped for its memory budget or idleness since its last answer. */
  evictions?: number;
  /** The call's instance was made anew because the worker had dropped its component's instances (evicted). */
  reinstantiated?: true;
}

/** The tool information a component's `describe` returns. */
export interface GuestToolInfo {
  name: string;
  description: string;
  inputSchema: string;
  outputSchema?: string;
  streaming: boolean;
  idempotent: boolean;
  /** 0.2.0: the author's human-readable name. */
  title?: string;
  /** 0.2.0: the author's hints (only those given). */
  annotations?: { readOnlyHint?: boolean; destructiveHint?: boolean; idempotentHint?: boolean; openWorldHint?: boolean };
  /** 0.2.0: icons a client may show. */
  icons?: Array<{ src: string; mimeType?: string; sizes?: string[] }>;
}

/** One content item of a 0.2.0 call's result, as it crosses from the worker (bytes as bytes; base64 is the server's business). */
export type GuestContent =
  | { type: 'text'; text: string }
  | { type: 'image' | 'audio'; data: Uint8Array; mimeType: string }
  | { type: 'resource_link'; uri: string; name: string; title?: string; description?: string; mimeType?: string }
  | { type: 'resource'; resource: { uri: string; mimeType?: string; text: string } | { uri: string; mimeType?: string; blob: Uint8Array } };

export type WorkerOutcome =
  /** A call's answer; `content` (0.2.0) travels beside the value, which is then '' when the tool returned none. */
  | { ok: true; value: string; content?: GuestContent[]; noValue?: true; accounting: WorkerAccounting }
  | { ok: true; tools: GuestToolInfo[]; accounting: WorkerAccounting }
  /** `refused`: the call was refused before the guest ran (its args failed the input schema: INVALID_INPUT). */
  | { ok: false; error: ToolErrorData; refused?: true; accounting: WorkerAccounting };

export type { WorkerHeap };
