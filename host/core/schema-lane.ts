/**
 * The schema lane: a small worker thread where schemas the host did not write, and that do not belong to a
 * sandboxed tool (an imported MCP server's tools), are compiled and args validated against them. The main
 * thread only copies a schema (once per worker, by its hash) and the args, and waits.
 *
 * Guarantees: each task has a hard deadline (`SchemaLimits.laneMs`, `host.guest_limits.schema_lane_ms`,
 * default 1 s) from when the worker starts it; past it the worker is terminated (a `worker.terminate()`
 * stops any JS loop in a few ms), a new one is started for the next task, and the task answers
 * INVALID_INPUT with `details.reason: "schema-lane-deadline"` (a limit hit, `schema_lane_ms`). A caller's
 * signal ends its task the same way. Tasks run one at a time, in order; a task's deadline does not run
 * while it waits, so one hostile schema delays the others by at most one deadline each.
 * Does not: bound how long tasks wait behind each other (one worker: imported tools' validation is rare and
 * cheap next to the remote call that follows it); hold the process open (the worker is unref'd).
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { ToolhostError, type ToolErrorData } from '../base/errors.js';
import { resolveSchemaLimits, type SchemaLimits } from './schema-limits.js';
import type { LaneReply, LaneTask } from './schema-lane-worker.js';
import type { JsonSchema } from './tool.js';

type TaskBody = { op: 'check'; output?: boolean } | { op: 'validate'; args: unknown; callId?: string };

/** What a lane task may be given: the limits (defaults: DEFAULT_SCHEMA_LIMITS), a stop, where a deadline hit is reported. */
export interface LaneTaskOptions {
  limits?: Partial<SchemaLimits>;
  signal?: AbortSignal;
  /** Told the tool and the limit's config key (`schema_lane_ms`) when the task ran past its deadline. */
  onLimit?: (tool: string, limit: string) => void;
}

interface Pending {
  task: LaneTask;
  resolve: (error: ToolErrorData | undefined) => void;
  options: LaneTaskOptions;
}

interface Running {
  pending: Pending;
  timer: NodeJS.Timeout;
  onAbort?: () => void;
}

export class SchemaLane {
  #worker: Worker | undefined;
  /** Whether the worker has loaded its modules (ajv: ~100 ms), after which a task's deadline may run. */
  #ready = false;
  /** Schema hashes the current worker holds (it is sent each text once). */
  #held = new Set<string>();
  readonly #queue: Pending[] = [];
  #running: Running | undefined;
  #nextId = 1;
  #closed = false;

  /**
   * Whether `schema` can serve as `tool`'s input (or, with `output`, output) schema within `limits`: checked
   * for cost, against its meta-schema and compiled, in the lane. Throws the ToolhostError registration would
   * (COMPONENT_INVALID past a cost limit, INVALID_INPUT when it does not compile, or past the deadline).
   */
  async check(tool: string, schema: JsonSchema, options: LaneTaskOptions & { output?: boolean } = {}): Promise<void> {
    const error = await this.#submit(tool, schema, { op: 'check', output: options.output === true }, options);
    if (error !== undefined) throw ToolhostError.fromData(error);
  }

  /** Check a call's `args` against `tool`'s `schema` in the lane: undefined when they are valid, else the error (INVALID_INPUT). */
  async validate(tool: string, schema: JsonSchema, args: unknown, options: LaneTaskOptions & { callId?: string } = {}): Promise<ToolhostError | undefined> {
    const { callId } = options;
    const error = await this.#submit(tool, schema, { op: 'validate', args, ...(callId === undefined ? {} : { callId }) }, options);
    return error === undefined ? undefined : ToolhostError.fromData({ ...error, ...(callId === undefined ? {} : { callId }) });
  }

  /** Stop the worker; tasks still queued answer INTERNAL. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const pending of this.#queue.splice(0)) pending.resolve({ code: 'INTERNAL', message: 'the schema lane was closed' });
    const worker = this.#worker;
    this.#worker = undefined;
    await worker?.terminate();
  }

  #submit(tool: string, schema: JsonSchema, body: TaskBody, options: LaneTaskOptions): Promise<ToolErrorData | undefined> {
    if (this.#closed) return Promise.resolve({ code: 'INTERNAL', message: 'the schema lane was closed' });
    const resolved = resolveSchemaLimits(options.limits);
    const text = JSON.stringify(schema) ?? 'null';
    const hash = createHash('sha256').update(text).digest('hex');
    const task = { id: this.#nextId++, tool, hash, text, limits: resolved, ...body } as LaneTask;
    return new Promise((resolve) => {
      this.#queue.push({ task, resolve, options });
      this.#next();
    });
  }

  #next(): void {
    if (this.#running !== undefined || this.#closed) return;
    const pending = this.#queue.shift();
    if (pending === undefined) return;
    const { signal, onLimit } = pending.options;
    if (signal?.aborted === true) {
      pending.resolve(abortedError(pending.task.tool));
      this.#next();
      return;
    }
    const worker = this.#ensureWorker();
    // A new worker says when it is ready (its start is not charged to the task); the task goes then.
    if (!this.#ready) {
      this.#queue.unshift(pending);
      return;
    }
    const { task } = pending;
    if (this.#held.has(task.hash)) delete task.text;
    const deadlineMs = task.limits.laneMs;
    const timer = setTimeout(() => {
      onLimit?.(task.tool, 'schema_lane_ms');
      this.#kill({
        code: 'INVALID_INPUT',
        message: `the schema of "${task.tool}" took longer than ${deadlineMs} ms to ${task.op === 'check' ? 'compile' : 'check the args against'} (host.guest_limits.schema_lane_ms); its worker was replaced`,
        details: { reason: 'schema-lane-deadline', limit: 'schema_lane_ms', limitMs: deadlineMs },
      });
    }, deadlineMs);
    const running: Running = { pending, timer };
    if (signal !== undefined) {
      const onAbort = (): void => this.#kill(abortedError(task.tool));
      signal.addEventListener('abort', onAbort, { once: true });
      running.onAbort = onAbort;
    }
    this.#running = running;
    worker.postMessage(task);
  }

  /** The running task ends with `error`, and its worker with it. */
  #kill(error: ToolErrorData): void {
    const worker = this.#worker;
    this.#worker = undefined;
    this.#held = new Set();
    void worker?.terminate();
    this.#finish(error);
  }

  #finish(error: ToolErrorData | undefined): void {
    const running = this.#running;
    if (running === undefined) return;
    this.#running = undefined;
    clearTimeout(running.timer);
    if (running.onAbort !== undefined) running.pending.options.signal?.removeEventListener('abort', running.onAbort);
    running.pending.resolve(error);
    this.#next();
  }

  #ensureWorker(): Worker {
    if (this.#worker !== undefined) return this.#worker;
    const worker = new Worker(laneScript());
    worker.on('message', (reply: LaneReply | { ready: true }) => {
      if (worker !== this.#worker) return;
      if ('ready' in reply) {
        this.#ready = true;
        this.#next();
        return;
      }
      if (this.#running?.pending.task.id !== reply.id) return;
      if (reply.holds) this.#held.add(this.#running.pending.task.hash);
      else this.#held.delete(this.#running.pending.task.hash);
      this.#finish(reply.error);
    });
    const lost = (why: string): void => {
      if (worker !== this.#worker) return;
      this.#worker = undefined;
      this.#held = new Set();
      const error: ToolErrorData = { code: 'INTERNAL', message: `the schema lane's worker ${why}` };
      if (this.#running !== undefined) {
        this.#finish(error);
        return;
      }
      // Lost before it was ready: the first waiting task fails (a worker that never starts fails each in turn).
      this.#queue.shift()?.resolve(error);
      this.#next();
    };
    worker.on('error', (error) => lost(`failed: ${error.message}`));
    worker.on('exit', (code) => lost(`exited (${code})`));
    // After the listeners: a 'message' listener refs the worker's port again, and an idle lane must not hold the process.
    worker.unref();
    this.#worker = worker;
    this.#ready = false;
    return worker;
  }
}

/**
 * The worker's script: the compiled one next to this file, or, when toolhost runs from its TypeScript
 * sources (tests), the built one beside the sandbox worker the test suite names (as sandbox/pool-options.ts does).
 */
function laneScript(): URL {
  const compiled = new URL('./schema-lane-worker.js', import.meta.url);
  if (existsSync(fileURLToPath(compiled))) return compiled;
  const built = process.env.TOOLHOST_DEV_WORKER;
  return built === undefined ? compiled : new URL('../../core/schema-lane-worker.js', pathToFileURL(built));
}

function abortedError(tool: string): ToolErrorData {
  return { code: 'CANCELLED', message: `checking the args of "${tool}" was stopped`, details: { reason: 'schema-lane-aborted' } };
}

let shared: SchemaLane | undefined;

/** The process's schema lane (made at first use; its worker never holds the process open). */
export function sharedSchemaLane(): SchemaLane {
  shared ??= new SchemaLane();
  return shared;
}
