/**
 * Calls known fleet-wide, in Redis. A call's `<key>` is its id scoped by its
 * principal (principal-scope.ts `callKey`: the id alone without a principal,
 * else `<principal> <id>`), so ids are per principal fleet-wide: one
 * principal can neither squat, nor cancel, nor learn about another's id.
 * Each host:
 * - registers a call when it starts (`<prefix>call:<key>` = its host id, tool,
 *   tenant and principal, with a lease of `leaseMs`) and counts it in the
 *   tool's and the tenant's slot sets (`<prefix>slots:tool:<name>`,
 *   `<prefix>slots:tenant:<tenant>`: sorted sets of call keys scored by lease
 *   expiry), atomically with the cap check (one Lua script): a full cap
 *   refuses the call with OVERLOADED. The tenant is the call's principal
 *   (`(anonymous)` without one), never a name the client chose;
 * - renews its calls' leases and its own record (`<prefix>host:<id>`, in the
 *   `<prefix>hosts` set) every `leaseMs / 3`: a host that dies stops renewing,
 *   and after one lease its calls are gone (cancel: NOT_FOUND) and their slots
 *   free;
 * - on a call's end deletes it and remembers it as done
 *   (`<prefix>done:<key>`, for `doneTtlMs`: cancel answers ALREADY_COMPLETED);
 * - listens on its channel (`<prefix>host:<id>`) for cancels and their replies.
 *
 * `cancel(id, principal)` for a call not on this host: the canceller's key
 * finds the record, which names the host; the request (with the principal) is
 * published on that host's channel, which cancels that principal's call
 * locally and publishes the outcome back. No subscriber (the host is gone):
 * NOT_FOUND. A call record that does not parse is NOT_FOUND (logged).
 *
 * On a Redis Cluster (issue 40) the call record and the two slot sets are in
 * three slots, so registering is three single-slot steps instead of one
 * script: `SET call:<key> NX` (DUPLICATE), then take a place in the tool's set,
 * then in the tenant's (each a check-and-add script on its one key, so a cap
 * is never exceeded), giving back what was taken when a later step refuses.
 * Between the steps another host may see a place taken by a call that is about
 * to be refused (a spurious OVERLOADED under contention for the last place,
 * never one call too many). A host that dies between steps leaves entries
 * that lapse with their lease. Renewals and unregistering are independent
 * commands (`link.batch`), each to its own slot; cancels and their answers go
 * over sharded pub/sub (the channel `host:<id>` on its slot's master).
 *
 * (Over 400 lines: the single-Redis script, its cluster steps and the cancel
 * relay read and write the same records; split, each half would restate them.)
 */
import { carrierOf, type TraceSpan } from '../core/tracing.js';
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { ToolhostError, type CancelOutcome } from '../base/errors.js';
import { ChurnTable } from '../core/churn-table.js';
import type { CallDirectory, FleetCall, FleetHostHooks, FleetStatus } from '../core/fleet.js';
import type { Logger } from '../base/logger.js';
import { callKey, lookupKey } from '../core/principal-scope.js';
import type { FleetHostCall, FleetHostRecord } from './host-record.js';
import type { RedisLink } from './link.js';

export interface FleetLimits {
  /** Most calls of one tool running at once across the fleet, by tool name (`*`: any other tool). */
  perTool?: Readonly<Record<string, number>>;
  /**
   * Most calls of one tenant running at once across the fleet, by principal
   * (`(anonymous)`: every caller without one; `*`: any other tenant).
   */
  perTenant?: Readonly<Record<string, number>>;
}

export interface RedisCallDirectoryOptions {
  prefix?: string;
  /** How long a call (and the host record) stays registered without renewal (ms, default 15000). */
  leaseMs?: number;
  /** How long a finished call is remembered as done (ms, default 10 min). */
  doneTtlMs?: number;
  /** How long a cancel waits for the running host's answer (ms, default 2000). */
  cancelTimeoutMs?: number;
  limits?: FleetLimits;
  /** What this host reports in the fleet view besides its calls (servers, pool). */
  describe?: () => Record<string, unknown>;
  /** This host's id in the fleet (default `<hostname>:<pid>:<random>`). */
  hostId?: string;
}

/** An entered call, with its Redis record (written again by each heartbeat: a restarted Redis learns it back). */
interface EnteredCall extends FleetHostCall {
  tenant: string;
  record: string;
}

const ENTER_SCRIPT = `
if redis.call('EXISTS', KEYS[1]) == 1 then return 'DUPLICATE' end
local now = tonumber(ARGV[3])
local lease = tonumber(ARGV[4])
local toolCap = tonumber(ARGV[5])
local tenantCap = tonumber(ARGV[6])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
if toolCap > 0 and redis.call('ZCARD', KEYS[2]) >= toolCap then return 'TOOL_FULL' end
if KEYS[3] ~= KEYS[2] then
  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
  if tenantCap > 0 and redis.call('ZCARD', KEYS[3]) >= tenantCap then return 'TENANT_FULL' end
  redis.call('ZADD', KEYS[3], now + lease, ARGV[1])
  redis.call('PEXPIRE', KEYS[3], lease * 2)
end
redis.call('ZADD', KEYS[2], now + lease, ARGV[1])
redis.call('PEXPIRE', KEYS[2], lease * 2)
redis.call('SET', KEYS[1], ARGV[2], 'PX', lease)
return 'OK'
`;

/** Take a place in one slot set. KEYS: the set. ARGV: member, now, lease, cap. 1: taken; 0: full. */
const TAKE_SCRIPT = `
local now = tonumber(ARGV[2])
local lease = tonumber(ARGV[3])
local cap = tonumber(ARGV[4])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if cap > 0 and redis.call('ZCARD', KEYS[1]) >= cap then return 0 end
redis.call('ZADD', KEYS[1], now + lease, ARGV[1])
redis.call('PEXPIRE', KEYS[1], lease * 2)
return 1
`;

export class RedisCallDirectory implements CallDirectory {
  readonly #link: RedisLink;
  readonly #logger: Logger;
  readonly #prefix: string;
  readonly #leaseMs: number;
  readonly #doneTtlMs: number;
  readonly #cancelTimeoutMs: number;
  readonly #limits: FleetLimits;
  readonly #describe: () => Record<string, unknown>;
  readonly #hostId: string;
  readonly #startedAt = new Date().toISOString();
  /** Calls entered here (a ChurnTable, not a Map: see churn-table.ts). */
  readonly #entered = new ChurnTable<string, EnteredCall>();
  readonly #unregistered = new Set<string>();
  readonly #pending = new Map<string, (outcome: CancelOutcome) => void>();
  #hooks: FleetHostHooks | undefined;
  #timer: NodeJS.Timeout | undefined;
  #subscribed = false;
  #closed = false;

  constructor(link: RedisLink, logger: Logger, options: RedisCallDirectoryOptions = {}) {
    this.#link = link;
    this.#logger = logger.child({ component: 'fleet' });
    this.#prefix = options.prefix ?? 'toolhost:';
    this.#leaseMs = options.leaseMs ?? 15_000;
    this.#doneTtlMs = options.doneTtlMs ?? 600_000;
    this.#cancelTimeoutMs = options.cancelTimeoutMs ?? 2000;
    for (const [name, value] of [['leaseMs', this.#leaseMs], ['doneTtlMs', this.#doneTtlMs], ['cancelTimeoutMs', this.#cancelTimeoutMs]] as const) {
      if (!(Number.isInteger(value) && value > 0)) throw new TypeError(`options.${name} must be a positive integer`);
    }
    this.#limits = options.limits ?? {};
    this.#describe = options.describe ?? (() => ({}));
    this.#hostId = options.hostId ?? `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  }

  get hostId(): string {
    return this.#hostId;
  }

  bind(hooks: FleetHostHooks): void {
    if (this.#hooks) throw new TypeError('this call directory is already bound to a registry');
    this.#hooks = hooks;
  }

  /** Subscribe and start renewing leases (every time Redis comes back, too). */
  start(): void {
    this.#link.onUp(() => void this.#online());
    if (this.#link.up) void this.#online();
    this.#timer = setInterval(() => void this.#heartbeat(), Math.max(50, Math.floor(this.#leaseMs / 3)));
    this.#timer.unref?.();
  }

  async #online(): Promise<void> {
    if (this.#closed) return;
    if (!this.#subscribed) {
      try {
        await this.#link.subscribe(this.#channel(this.#hostId), (message) => this.#onMessage(message));
        this.#subscribed = true;
      } catch (error) {
        this.#logger.warn({ err: (error as Error).message }, 'fleet: could not subscribe to this host\'s channel');
      }
    }
    await this.#heartbeat();
  }

  #key(kind: 'call' | 'done' | 'host', id: string): string {
    return `${this.#prefix}${kind}:${id}`;
  }

  #channel(hostId: string): string {
    return `${this.#prefix}host:${hostId}`;
  }

  #slots(kind: 'tool' | 'tenant', name: string): string {
    return `${this.#prefix}slots:${kind}:${name}`;
  }

  #cap(table: Readonly<Record<string, number>> | undefined, name: string | undefined): number {
    if (table === undefined || name === undefined) return 0;
    return table[name] ?? table['*'] ?? 0;
  }

  async enter(call: FleetCall): Promise<void> {
    const key = callKey(call.principal, call.callId);
    const startedAt = new Date().toISOString();
    const entered: FleetHostCall & { tenant: string } = {
      callId: call.callId,
      ...(call.principal === undefined ? {} : { principal: call.principal }),
      tool: call.tool,
      tenant: call.tenant,
      ...(call.agent === undefined ? {} : { agent: call.agent }),
      startedAt,
    };
    const record = JSON.stringify({ host: this.#hostId, ...entered });
    const toolSlots = this.#slots('tool', call.tool);
    const tenantSlots = this.#slots('tenant', call.tenant);
    let outcome: string;
    try {
      const toolCap = this.#cap(this.#limits.perTool, call.tool);
      const tenantCap = this.#cap(this.#limits.perTenant, call.tenant);
      outcome = this.#link.mode === 'cluster'
        ? await this.#enterInSteps(key, record, toolSlots, tenantSlots, toolCap, tenantCap)
        : String(await this.#link.script(ENTER_SCRIPT, [this.#key('call', key), toolSlots, tenantSlots], [key, record, Date.now(), this.#leaseMs, toolCap, tenantCap]));
    } catch (error) {
      if (!(error instanceof ToolhostError) || error.code !== 'FLEET_UNAVAILABLE') throw error;
      // Redis is away: the call runs, known to this host only (its caps cannot be checked).
      this.#unregistered.add(key);
      this.#logger.warn({ callId: call.callId, tool: call.tool, err: error.message }, 'fleet: Redis unreachable; the call runs unregistered and outside the fleet\'s caps');
      return;
    }
    if (outcome === 'DUPLICATE') throw new ToolhostError('INVALID_INPUT', `call id "${call.callId}" is already in flight on another host`);
    if (outcome === 'TOOL_FULL') {
      throw new ToolhostError('OVERLOADED', `tool "${call.tool}" already runs ${this.#cap(this.#limits.perTool, call.tool)} calls across the fleet (its cap); try again later`, { details: { cap: 'tool', tool: call.tool } });
    }
    if (outcome === 'TENANT_FULL') {
      throw new ToolhostError('OVERLOADED', `tenant "${call.tenant}" already runs ${this.#cap(this.#limits.perTenant, call.tenant)} calls across the fleet (its cap); try again later`, { details: { cap: 'tenant', tenant: call.tenant } });
    }
    this.#entered.set(key, { ...entered, record });
  }

  /** ENTER_SCRIPT's outcome, in single-slot steps (a cluster): see the file's comment. */
  async #enterInSteps(key: string, record: string, toolSlots: string, tenantSlots: string, toolCap: number, tenantCap: number): Promise<string> {
    const callKey = this.#key('call', key);
    const lease = this.#leaseMs;
    if ((await this.#link.command(['SET', callKey, record, 'PX', String(lease), 'NX'])) === null) return 'DUPLICATE';
    const giveBack = (commands: string[][]): void => {
      this.#link.batch(commands).catch((error: unknown) => this.#logger.debug({ err: (error as Error).message }, 'fleet: could not give back a refused call\'s places (they lapse with the lease)'));
    };
    try {
      if (Number(await this.#link.script(TAKE_SCRIPT, [toolSlots], [key, Date.now(), lease, toolCap])) !== 1) {
        giveBack([['DEL', callKey]]);
        return 'TOOL_FULL';
      }
      if (Number(await this.#link.script(TAKE_SCRIPT, [tenantSlots], [key, Date.now(), lease, tenantCap])) !== 1) {
        giveBack([['ZREM', toolSlots, key], ['DEL', callKey]]);
        return 'TENANT_FULL';
      }
    } catch (error) {
      giveBack([['ZREM', toolSlots, key], ['DEL', callKey]]);
      throw error;
    }
    return 'OK';
  }

  async leave(callId: string, principal?: string): Promise<void> {
    const key = callKey(principal, callId);
    if (this.#unregistered.delete(key)) return;
    const entered = this.#entered.get(key);
    if (!entered) return;
    this.#entered.delete(key);
    const commands: string[][] = [
      ['DEL', this.#key('call', key)],
      ['SET', this.#key('done', key), this.#hostId, 'PX', String(this.#doneTtlMs)],
      ['ZREM', this.#slots('tool', entered.tool), key],
      ['ZREM', this.#slots('tenant', entered.tenant), key],
    ];
    await this.#link.batch(commands).catch((error: unknown) => {
      // Its lease runs out by itself (then cancel says NOT_FOUND rather than ALREADY_COMPLETED).
      this.#logger.debug({ callId, err: (error as Error).message }, 'fleet: could not unregister a finished call');
    });
  }

  async cancel(callId: string, principal?: string, span?: TraceSpan): Promise<CancelOutcome> {
    // Only the canceller's own key is looked up: another principal's id, running or done, is not seen.
    const key = lookupKey(principal, callId);
    if (key === undefined) return 'NOT_FOUND';
    const raw = await this.#link.command<string | null>(['GET', this.#key('call', key)]);
    if (raw === null) {
      const done = await this.#link.command<number>(['EXISTS', this.#key('done', key)]);
      return Number(done) === 1 ? 'ALREADY_COMPLETED' : 'NOT_FOUND';
    }
    const host = callRecordHost(String(raw));
    if (host === undefined) {
      this.#logger.warn({ callId }, 'fleet: a call record that does not parse; answering NOT_FOUND');
      return 'NOT_FOUND';
    }
    if (host === this.#hostId) return this.#hooks?.cancelLocal(callId, principal) ?? 'NOT_FOUND';
    const request = randomUUID();
    const answered = new Promise<CancelOutcome>((resolve) => this.#pending.set(request, resolve));
    let timer: NodeJS.Timeout | undefined;
    // Traced: the relay is a CLIENT span here, and its context travels in the message to the call's host.
    const relay = span?.child('fleet.cancel.relay', { kind: 'client', attributes: { 'toolhost.fleet.host': host } });
    try {
      const trace = relay?.carrier();
      const receivers = await this.#link.publish(this.#channel(host), JSON.stringify({ type: 'cancel', callId, request, replyTo: this.#hostId, ...(principal === undefined ? {} : { principal }), ...(trace === undefined ? {} : { trace }) }));
      // Nobody listens on that host's channel: it is gone, and its calls with it (their leases run out).
      if (receivers === 0) return 'NOT_FOUND';
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new ToolhostError('FLEET_UNAVAILABLE', `host ${host} did not answer the cancel of "${callId}" within ${this.#cancelTimeoutMs} ms`)), this.#cancelTimeoutMs);
      });
      const outcome = await Promise.race([answered, timeout]);
      relay?.setAttributes({ 'toolhost.cancel.outcome': outcome });
      return outcome;
    } catch (error) {
      relay?.fail(error instanceof ToolhostError ? error.code : 'INTERNAL');
      throw error;
    } finally {
      relay?.end();
      clearTimeout(timer);
      this.#pending.delete(request);
    }
  }

  #onMessage(message: string): void {
    let parsed: { type?: string; callId?: string; request?: string; replyTo?: string; principal?: unknown; outcome?: CancelOutcome; trace?: unknown };
    try {
      parsed = JSON.parse(message) as typeof parsed;
    } catch {
      return;
    }
    if (parsed.type === 'cancel' && typeof parsed.callId === 'string' && typeof parsed.replyTo === 'string') {
      // A request naming a principal reaches only that principal's calls (a malformed one reaches none).
      const principal = parsed.principal === undefined ? undefined : typeof parsed.principal === 'string' ? parsed.principal : null;
      // Traced: the cancel continues the canceller's trace here (the message carried its context).
      const tracer = this.#hooks?.tracer;
      const carrier = tracer === undefined || typeof parsed.trace !== 'object' || parsed.trace === null ? undefined : carrierOf(parsed.trace as Record<string, unknown>);
      const span = tracer?.startSpan('fleet.cancel', { kind: 'server', ...(carrier === undefined ? {} : { parent: carrier }), attributes: { 'toolhost.fleet.from': parsed.replyTo } });
      const outcome = principal === null ? 'NOT_FOUND' : this.#hooks?.cancelLocal(parsed.callId, principal) ?? 'NOT_FOUND';
      span?.setAttributes({ 'toolhost.cancel.outcome': outcome });
      span?.end();
      this.#logger.debug({ callId: parsed.callId, from: parsed.replyTo, outcome }, 'fleet: cancel from another host');
      this.#link.publish(this.#channel(parsed.replyTo), JSON.stringify({ type: 'cancelled', request: parsed.request, outcome })).catch((error: unknown) => {
        this.#logger.warn({ err: (error as Error).message }, 'fleet: could not answer a cancel');
      });
    } else if (parsed.type === 'cancelled' && typeof parsed.request === 'string') {
      this.#pending.get(parsed.request)?.(parsed.outcome ?? 'NOT_FOUND');
    }
  }

  /** Renew this host's record and its calls' leases. */
  async #heartbeat(): Promise<void> {
    if (this.#closed || !this.#link.up) return;
    const now = Date.now();
    const expiry = String(now + this.#leaseMs);
    const lease = String(this.#leaseMs);
    let extra: Record<string, unknown> = {};
    try {
      extra = this.#describe();
    } catch (error) {
      this.#logger.debug({ err: (error as Error).message }, 'fleet: describing this host failed');
    }
    const record: FleetHostRecord = {
      ...extra,
      hostId: this.#hostId,
      pid: process.pid,
      hostname: hostname(),
      startedAt: this.#startedAt,
      heartbeatAt: new Date(now).toISOString(),
      inFlight: this.#entered.size + this.#unregistered.size,
      calls: this.#entered.entries().slice(0, 1000).map(([, { record: _record, ...call }]) => call),
    };
    const commands: string[][] = [
      ['SET', this.#key('host', this.#hostId), JSON.stringify(record), 'PX', lease],
      ['ZADD', `${this.#prefix}hosts`, expiry, this.#hostId],
      ['ZREMRANGEBYSCORE', `${this.#prefix}hosts`, '-inf', String(now)],
    ];
    for (const [key, call] of this.#entered.entries()) {
      // SET and ZADD rather than renewals: a Redis that restarted empty learns this host's calls back.
      commands.push(['SET', this.#key('call', key), call.record, 'PX', lease]);
      commands.push(['ZADD', this.#slots('tool', call.tool), expiry, key]);
      commands.push(['PEXPIRE', this.#slots('tool', call.tool), String(this.#leaseMs * 2)]);
      commands.push(['ZADD', this.#slots('tenant', call.tenant), expiry, key]);
      commands.push(['PEXPIRE', this.#slots('tenant', call.tenant), String(this.#leaseMs * 2)]);
    }
    try {
      await this.#link.batch(commands);
    } catch (error) {
      this.#logger.debug({ err: (error as Error).message }, 'fleet: heartbeat failed');
    }
  }

  status(): FleetStatus {
    return { hostId: this.#hostId, store: this.#link.up ? 'up' : 'down', registered: this.#entered.size, unregistered: this.#unregistered.size };
  }

  /** Stop renewing; drop this host's record (its calls were cancelled by the registry's close). */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#timer);
    if (!this.#link.up) return;
    const commands: string[][] = [['DEL', this.#key('host', this.#hostId)], ['ZREM', `${this.#prefix}hosts`, this.#hostId]];
    for (const [key] of this.#entered.entries()) commands.push(['DEL', this.#key('call', key)]);
    await this.#link.batch(commands).catch(() => undefined);
  }
}

/** The host a call record (`<prefix>call:<key>`) names, or undefined when it names none. */
function callRecordHost(raw: string): string | undefined {
  try {
    const parsed = JSON.parse(raw) as unknown;
    const host = typeof parsed === 'object' && parsed !== null ? (parsed as { host?: unknown }).host : undefined;
    return typeof host === 'string' && host.length > 0 ? host : undefined;
  } catch {
    return undefined;
  }
}
