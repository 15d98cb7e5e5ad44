/** What the registry is made with and hands back: its options, and the Wasm loader's interface. */
import type { CallTracer } from './tracing.js';
import type { SchemaLimits } from './schema-limits.js';
import type { ExecutionPolicyInput, PolicyDefaults } from '../policy/execution-policy.js';
import type { ToolGrant } from '../policy/grant.js';
import type { ApprovalHook } from '../policy/approval.js';
import type { AuditLog } from '../policy/audit.js';
import type { HostOwnedPath, HostOwnedPaths } from '../policy/host-owned-paths.js';
import type { CallIdLimits } from './call/ids.js';
import type { CallDirectory } from './fleet.js';
import type { Logger } from '../base/logger.js';
import type { RetryOptions } from './retry.js';
import type { StateLimits, StateStore } from './state.js';
import type { Tool } from './tool.js';

/** One component's tools, as a loader hands them to the registry. */
export interface LoadedComponentTools {
  /** The component's name (its file name without `.wasm`). */
  component: string;
  path?: string;
  /** The component's content hash. */
  id: string;
  /** Whether the transpiled form came from the on-disk cache. */
  cache: 'hit' | 'miss';
  tools: Tool[];
  /**
   * The component's prompts and resources (0.2.0's optional exports), run like a call of this tool
   * (reserved name; never registered as a tool): see core/surfaces.ts.
   */
  surface?: { tool: Tool; prompts: boolean; resources: boolean };
}

/** What `registerWasmTools` registered, and under which names. */
export interface WasmLoadReport {
  components: Array<Omit<LoadedComponentTools, 'tools'> & { tools: string[] }>;
  /** Tools whose plain name was taken, registered as `<component>.<tool>`. */
  renamed: Array<{ component: string; tool: string; registeredAs: string }>;
}

export interface WasmLoadOptions {
  /**
   * Instance isolation for these tools: `call` (default: a fresh instance per
   * call), `conversation` (reused by one conversation's calls on a worker) or
   * `worker` (reused by every call on a worker).
   */
  isolation?: 'call' | 'conversation' | 'worker';
  /** Cap on these tools' linear memory (MiB): calls asking for more get this much (shorthand for `grant.memoryMb`). */
  memoryMb?: number;
  /** What the host grants these tools: network and privilege ceilings, egress and env allowlists, a worktree. */
  grant?: ToolGrant;
  /** The policy these tools' calls get where they say nothing (within the grant). */
  defaultPolicy?: ExecutionPolicyInput;
  /**
   * Remote sources only (`oci://`): whose signature they must carry — public key files (PEM, ECDSA P-256), a
   * pinned Sigstore trusted root with the identities trusted under it (keyless), or `skip` (loaded unverified,
   * with a warning). Absent: the host's `distribution.verify`. See docs/distribution.md.
   */
  verify?: { keys?: readonly string[]; trustedRoot?: string; identities?: ReadonlyArray<{ issuer: string; subject?: string; subjectRegExp?: string }>; skip?: boolean };
  /**
   * A load asked for at runtime by a client (the `toolhost_load` admin tool): a remote source must be in
   * `distribution.registries` (none are, unless configured) and verified (`skip` does not apply).
   */
  runtime?: boolean;
  /** Aborts a remote fetch (the caller's Ctrl-C, a call's cancel, a server's shutdown): it ends with CANCELLED. */
  signal?: AbortSignal;
}

/** What the sandbox's worker pool is doing (for metrics and health checks). */
export interface SandboxStats {
  threads: number;
  queueSize: number;
  /** Share of worker time spent running tasks (0..1). */
  utilization: number;
  /** Where guest code runs: worker threads of the host process, or of a supervised sandbox process. */
  containment?: 'thread' | 'process';
  /** Tasks taken back before a worker claimed them, and tasks posted again after the worker holding them was lost (thread containment). */
  handedBack?: { abandoned: number; reposted: number };
  /** Idle workers' spins for their next task that caught one, and those that ended without (thread containment; see `host.pool.spin_us`). */
  spins?: { caught: number; missed: number };
  /** Instances made ahead for hot components on a second worker (their calls came back to back), and those that failed. */
  warms?: { made: number; failed: number };
  /** Workers held by calls waiting for their clients now, and the limits (host.pool.client_waits, client_waits_per_principal). */
  clientWaits?: { waiting: number; max: number; perPrincipal: number };
  /** The sandbox process (process containment): its pid (none between a death and the next start) and its restarts so far. */
  process?: { pid: number | undefined; restarts: number };
}

/** A sandbox worker's heap after a forced garbage collection (measurements only). */
export interface WorkerHeap {
  threadId: number;
  /** Whether V8 let the worker collect (false: the figures are as V8 left them). */
  collected: boolean;
  heapUsedBytes: number;
  heapTotalBytes: number;
  /** Memory outside the heap that V8 knows of (ArrayBuffers, WebAssembly memories). */
  externalBytes: number;
  /**
   * Components (at one memory cap each) whose compiled modules the worker holds: an idle-released one is not
   * among them (issue 37, item 2). Absent from a sandbox process's workers' figures when it cannot tell.
   */
  components?: number;
}

/** The sandbox's pool as the registry sees it: its state, its workers' garbage, its end. */
export interface SandboxHandle {
  /** The pool's state, once it has started (undefined before). */
  stats(): SandboxStats | undefined;
  /** Collect every sandbox worker's garbage and read its heap (measurements only; undefined without a pool that can). */
  collectWorkerGarbage(): Promise<WorkerHeap[] | undefined>;
  close(): Promise<void>;
}

/** Loads component files into tools. The sandbox implements it; core knows nothing about Wasm. */
export interface WasmToolLoader {
  load(paths: string[], options: WasmLoadOptions): Promise<LoadedComponentTools[]>;
  /** Finish what loading deferred (compiling components whose description was cached). */
  warm?(): Promise<void>;
  /** Paths the loader reads code from (its cache): a writable worktree must not overlap them. */
  ownedPaths?(): HostOwnedPath[];
  close(): Promise<void>;
}

export interface ToolRegistryOptions {
  /** Conversation state (default: in memory, in this thread). */
  stateStore?: StateStore;
  /**
   * Caps on conversation state (defaults: DEFAULT_STATE_LIMITS). The default
   * in-memory store enforces all of them; with a store of your own, the host
   * checks the value size and your store the per-conversation limits.
   */
  stateLimits?: Partial<StateLimits>;
  /** Structured log (default: pino JSON on stderr, level from TOOLHOST_LOG). */
  logger?: Logger;
  /** Host policy defaults (wall-clock limit, labels). */
  defaults?: Partial<PolicyDefaults>;
  /** How long a cancelled call may wind down cooperatively before it is stopped hard (ms). */
  cancelGraceMs?: number;
  /** Backoff between retries of transient failures (see `backoffDelay`). */
  retry?: Partial<RetryOptions>;
  /** Where policy decisions are recorded (default: pino JSON lines on stderr). */
  audit?: AuditLog;
  /** Approves PRIVILEGED and FULL_ACCESS calls (default: refuses them all). */
  approve?: ApprovalHook;
  /** Where allowlisted environment values come from when neither the grant nor the call sets them (default: process.env). */
  hostEnv?: NodeJS.ProcessEnv;
  /** Where calls are known beyond this host: fleet-wide caps and cancel (default: this host only). */
  fleet?: CallDirectory;
  /**
   * Where the calls' spans go (OpenTelemetry, see core/tracing.ts; default none: nothing is traced and nothing
   * of a tracer is loaded). `createHost` makes one from `telemetry:` and the OTEL_* environment.
   */
  tracer?: CallTracer;
  /**
   * Call id rules: the longest accepted id (default 128 characters) and the
   * bytes of finished ids remembered for ALREADY_COMPLETED (default 1 MiB).
   */
  callIds?: Partial<CallIdLimits>;
  /** Levels a call's result may nest before the call ends OUTPUT_LIMIT_EXCEEDED (default 256). */
  maxResultDepth?: number;
  /**
   * Bytes (as JSON) a tool's request to its calling client (sampling, elicitation) may take, and its
   * answer (default 1 MiB; config `host.guest_limits.client_request_bytes`): past it, OUTPUT_LIMIT_EXCEEDED to the tool.
   */
  clientRequestBytes?: number;
  /**
   * Prompts, resources and resource templates one component may list, each (default 1000; config
   * `host.guest_limits.surface_items`): past it, the listing fails with OUTPUT_LIMIT_EXCEEDED.
   */
  surfaceItems?: number;
  /**
   * How long a prompts or resources request waits for one component's listing (ms; default 5000; config
   * `host.guest_limits.surface_listing_wait_ms`): past it the component is left out of that answer.
   */
  surfaceListingWaitMs?: number;
  /**
   * The paths a writable worktree must not overlap (default: the process's
   * own, see `processOwnedPaths`). The registry adds its loader's cache, its
   * audit log's file and every component path it loads; a host adds its
   * config file and imported MCP servers (`createHost`).
   */
  hostOwnedPaths?: HostOwnedPaths;
  /**
   * What tools' schemas may cost the main thread (`DEFAULT_SCHEMA_LIMITS`): checked at registration
   * (COMPONENT_INVALID past one) and per call (INVALID_INPUT); config `host.guest_limits.schema_*`,
   * `args_depth`, `validation_steps`.
   */
  schemaLimits?: Partial<SchemaLimits>;
  /**
   * The loader behind `registerWasmTools` (the sandbox's, when the registry is
   * made by `createRegistry` or `createHost`). The registry closes it.
   */
  wasmLoader?: WasmToolLoader;
  /** The pool the loader runs on: `sandboxStats`, `collectWorkerGarbage`; the registry closes it after the loader. */
  pool?: SandboxHandle;
}
