/**
 * A call's two faces for the code that runs it: the tool's context
 * (ToolContext) and the runner's sink (RunnerSink).
 *
 * Classes, with their getters on the prototype, and never object literals
 * with getters: a getter in a literal made per call is a new function in the
 * hidden class of every such object, so every call got hidden classes of its
 * own, and V8's young-generation GC keeps what those reach alive (it follows
 * the weak links between hidden classes as if they were strong). Every
 * call's objects were then promoted to the old generation: 2.4 KiB a call,
 * 16-20 % of all the main thread allocated, and full GCs to free it (measured
 * with `node --trace-gc-nvp` on a native echo loop).
 * Methods a tool may take off the object (`const { getState } = ctx`) stay
 * own arrow functions.
 */
import type { ToolContext } from '../context.js';
import type { CallWatcher, RunnerSink } from '../events.js';
import { Extensions } from '../extensions.js';
import type { ReportedAccounting } from '../result.js';
import type { ToolErrorData } from '../../base/errors.js';
import type { ConversationState } from '../state.js';
import type { GatedClient } from '../client-requests.js';
import type { CallPlan } from './admission.js';
import type { TraceSpan } from '../tracing.js';

/** What the views read from their call. */
export interface ViewedCall {
  readonly id: string;
  readonly softSignal: AbortSignal;
  readonly hardSignal: AbortSignal;
  readonly attemptSpan: TraceSpan | undefined;
}

export class CallContext implements ToolContext {
  readonly callId: string;
  declare readonly conversationId?: string;
  declare readonly conversationKey?: string;
  declare readonly sessionId?: string;
  declare readonly agentName?: string;
  declare readonly principal?: string;
  declare readonly workingDir?: string;
  readonly env: ToolContext['env'];
  readonly capabilities: ToolContext['capabilities'];
  readonly extensions: Extensions;
  readonly policy: ToolContext['policy'];
  readonly budgets: ToolContext['budgets'];
  readonly getState: ToolContext['getState'];
  readonly setState: ToolContext['setState'];
  readonly #call: ViewedCall;
  readonly #makeState: () => ConversationState;
  #state: ConversationState | undefined;
  readonly #makeClient: () => GatedClient;
  #client: GatedClient | undefined;

  /** `makeState` makes the call's state when the tool first uses it (most calls never do). */
  constructor(call: ViewedCall, plan: CallPlan, makeState: () => ConversationState, makeClient: () => GatedClient) {
    this.callId = call.id;
    const optional = this as { -readonly [K in 'conversationId' | 'conversationKey' | 'sessionId' | 'agentName' | 'principal' | 'workingDir']?: string };
    if (plan.conversationId !== undefined) optional.conversationId = plan.conversationId;
    if (plan.conversationKey !== undefined) optional.conversationKey = plan.conversationKey;
    if (plan.sessionId !== undefined) optional.sessionId = plan.sessionId;
    if (plan.agentName !== undefined) optional.agentName = plan.agentName;
    if (plan.principal !== undefined) optional.principal = plan.principal;
    if (plan.workingDir !== undefined) optional.workingDir = plan.workingDir;
    this.env = Object.freeze({ ...plan.capabilities.env });
    this.capabilities = plan.capabilities;
    this.extensions = plan.extensions ?? new Extensions();
    this.policy = plan.policy;
    this.budgets = plan.budgets;
    this.#call = call;
    this.#makeState = makeState;
    this.#makeClient = makeClient;
    this.getState = (key, fallback) => this.state.getState(key, fallback);
    this.setState = (key, value) => this.state.setState(key, value);
  }

  get signal(): AbortSignal {
    return this.#call.softSignal;
  }

  get state(): ConversationState {
    return (this.#state ??= this.#makeState());
  }

  get client(): GatedClient {
    return (this.#client ??= this.#makeClient());
  }

  get span(): TraceSpan | undefined {
    return this.#call.attemptSpan;
  }
}

/** The sink's methods, as the call makes them (they reach its private state). */
export interface SinkMethods {
  progress: RunnerSink['progress'];
  delta: RunnerSink['delta'];
  log: RunnerSink['log'];
  account(accounting: ReportedAccounting): void;
  limit(limit: string): void;
  refused(error: ToolErrorData): void;
  watch(watcher: CallWatcher): () => void;
}

export class CallSink implements RunnerSink {
  readonly progress: RunnerSink['progress'];
  readonly delta: RunnerSink['delta'];
  readonly log: RunnerSink['log'];
  readonly account: SinkMethods['account'];
  readonly limit: SinkMethods['limit'];
  readonly refused: SinkMethods['refused'];
  readonly watch: SinkMethods['watch'];
  readonly #call: ViewedCall;

  constructor(call: ViewedCall, methods: SinkMethods) {
    this.progress = methods.progress;
    this.delta = methods.delta;
    this.log = methods.log;
    this.account = methods.account;
    this.limit = methods.limit;
    this.refused = methods.refused;
    this.watch = methods.watch;
    this.#call = call;
  }

  get hardSignal(): AbortSignal {
    return this.#call.hardSignal;
  }

  get span(): TraceSpan | undefined {
    return this.#call.attemptSpan;
  }
}
