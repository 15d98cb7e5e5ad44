/** What a sandbox is made with: the pool's options, where it runs, the cache, guest limits, remote fetching. */
import type { RemoteComponentFetch } from './load/component-file.js';
import type { SandboxPoolOptions } from './pool.js';
import type { GuestOutputLimits } from './protocol.js';
import type { Containment } from './sandbox-runner.js';
import type { SchemaLimits } from '../core/schema-limits.js';

export interface SandboxOptions extends SandboxPoolOptions {
  /**
   * Where guest code runs (default `thread`): worker threads of this process,
   * or (`process`) of a supervised child process, so that a fatal error of V8
   * in a worker ends that process (restarted; its calls end with TOOL_CRASHED)
   * and never this one.
   */
  containment?: Containment;
  /** Where transpiled components are cached (default: see `defaultCacheDir`). */
  cacheDir?: string;
  /** Caps on captured guest output. */
  outputLimits?: Partial<GuestOutputLimits>;
  /** What a tool's schemas may cost (`host.guest_limits.schema_*`), checked in workers (createRegistry passes the registry's). */
  schemaLimits?: Partial<SchemaLimits>;
  /**
   * Elements a component's tables may hold in all (default DEFAULT_TABLE_ELEMENTS; never more than a
   * quarter of the worker heap holds, see `tableElementsForHeap`), split over every table its core instances define.
   */
  tableElements?: number;
  /**
   * Wall-clock budget of a component's `describe()` at load, its
   * instantiation included (ms, default 10 s): past it the load fails with
   * COMPONENT_INVALID and the worker is replaced.
   */
  describeTimeoutMs?: number;
  /** Process containment: how long the sandbox process may leave heartbeats unanswered before it is killed and replaced (ms, default 10 s; 0: never). */
  heartbeatMs?: number;
  /** Fetches remote sources (`oci://`, `https://`) into verified bytes (createRegistry supplies it). */
  fetchRemote?: RemoteComponentFetch;
}
