/**
 * The WASI imports a sandboxed component gets: built per instance, bound to
 * whichever call the instance is serving, reaching nothing on the real host
 * except what that call's resolved policy grants.
 *
 * It is assembled from preview2-shim's pure-JS (browser) build, whose
 * interfaces are handler-based and touch no host resource, rather than its
 * Node build, which hands guests the real environment, stdio, filesystem and
 * network through an I/O worker (loaded once, in shim.ts). On top of it:
 * - the environment is the call's (empty below ELEVATED; see policy/capabilities.ts);
 *   there are no arguments;
 * - the only directory is the call's worktree, preopened at `/worktree` through
 *   a confining adapter (worktree-fs.ts), read-only below ELEVATED; none without one;
 * - stdout and stderr are captured, split into lines and handed to `output`
 *   (capped), never written to the host's stdio;
 * - `exit` throws, ending only the current call;
 * - outgoing HTTP is synchronous (http.ts) and sent by the main thread through
 *   the egress checker under the call's network label; a refusal reaches the
 *   guest as `HTTP-request-denied` (a valid wasi:http error code);
 * - sockets answer `access-denied` below FULL_ACCESS, `not-supported` under it
 *   (toolhost has no socket implementation);
 * - `wasi:random/insecure-seed` is one value per instance, drawn from the CSPRNG
 *   (node:crypto) when the instance first asks and drawn again after a reset
 *   (`resetStreams`), never shared between instances, calls or principals
 *   (the shim's is one value per worker thread);
 * - polling is synchronous: guests run without JSPI, so a pollable that waits
 *   for a timer sleeps the worker thread (Atomics.wait, which costs no CPU),
 *   and one that can never become ready traps instead of hanging.
 */
import { randomFillSync } from 'node:crypto';
import type { LogLevel } from '../../core/events.js';
import { WORKTREE_GUEST_PATH } from '../../policy/capabilities.js';
import { SUPPORTED_WASI_IMPORTS } from '../load/supported-imports.js';
import { createSyncHttp, type GuestHttpRequest, type GuestHttpResult } from './http.js';
import { cliOutputStreams, replacePollableBlock, shimCli, shimClocks, shimFilesystem, shimIo, shimRandom, shimSockets, type CliStreamHandler, type ShimPollable } from './shim.js';
import { WorktreeAdapter } from './worktree-fs.js';

/** The call an instance is serving, as its WASI imports see it. */
export interface GuestCallScope {
  /** Captured stdout/stderr, one line at a time. */
  line(stream: 'stdout' | 'stderr', text: string): void;
  /** The call's environment. */
  env(): Array<[string, string]>;
  /** The call's preopened directories. */
  preopens(): Array<[unknown, string]>;
  /** Send an outgoing HTTP request through the host (blocks until it answers). */
  http(request: GuestHttpRequest): GuestHttpResult;
  /** Whether the call's network label lets sockets through (FULL_ACCESS). */
  socketsAllowed(): boolean;
}

/** A scope with nothing in it: no call, no capabilities. */
export const EMPTY_SCOPE: GuestCallScope = {
  line() {},
  env: () => [],
  preopens: () => [],
  http: () => ({ ok: false, error: { tag: 'HTTP-request-denied' } }),
  socketsAllowed: () => false,
};

type Namespace = Record<string, unknown>;

/** Deadlines of the timer pollables this layer created (ns on the monotonic clock). */
const timerDeadlines = new WeakMap<ShimPollable, bigint>();
const sleepCell = new Int32Array(new SharedArrayBuffer(4));
const monotonicNow = (): bigint => process.hrtime.bigint();

function blockUntilReady(pollables: ShimPollable[]): void {
  for (;;) {
    if (pollables.some((p) => p.ready())) return;
    let next: bigint | undefined;
    for (const pollable of pollables) {
      const deadline = timerDeadlines.get(pollable);
      if (deadline !== undefined && (next === undefined || deadline < next)) next = deadline;
    }
    if (next === undefined) {
      throw new Error('wasi:io/poll: nothing the guest waits on can become ready while it runs synchronously');
    }
    const waitMs = Number(next - monotonicNow()) / 1e6;
    if (waitMs > 0) Atomics.wait(sleepCell, 0, 0, Math.ceil(waitMs));
  }
}

// The shim's Pollable.block returns a promise (it expects JSPI); make it block
// synchronously. This module runs only inside sandbox workers.
replacePollableBlock((pollable) => blockUntilReady([pollable]));

const pollNamespace = {
  Pollable: shimIo.poll.Pollable,
  poll(list: ShimPollable[]): Uint32Array {
    if (list.length === 0) throw new Error('wasi:io/poll: poll needs at least one pollable');
    blockUntilReady(list);
    const ready: number[] = [];
    list.forEach((pollable, index) => {
      if (pollable.ready()) ready.push(index);
    });
    return new Uint32Array(ready);
  },
};

const monotonicClock = {
  now: monotonicNow,
  resolution: (): bigint => 1n,
  subscribeDuration(duration: bigint): ShimPollable {
    return timer(monotonicNow() + duration);
  },
  subscribeInstant(instant: bigint): ShimPollable {
    return timer(instant);
  },
};

function timer(deadline: bigint): ShimPollable {
  const pollable = shimIo.pollableCreate({ ready: () => monotonicNow() >= deadline, wait: () => Promise.resolve() });
  timerDeadlines.set(pollable, deadline);
  return pollable;
}

function socketImports(scope: GuestCallScope): Record<string, Namespace> {
  // `access-denied` below FULL_ACCESS; under it `not-supported`: toolhost has no socket implementation.
  const refuse = (): never => {
    throw scope.socketsAllowed() ? 'not-supported' : 'access-denied';
  };
  return {
    'wasi:sockets/network': sockets.network,
    'wasi:sockets/instance-network': sockets.instanceNetwork,
    'wasi:sockets/tcp': sockets.tcp,
    'wasi:sockets/tcp-create-socket': { createTcpSocket: refuse },
    'wasi:sockets/udp': sockets.udp,
    'wasi:sockets/udp-create-socket': { createUdpSocket: refuse },
    'wasi:sockets/ip-name-lookup': { ...sockets.ipNameLookup, resolveAddresses: refuse },
  };
}

const sockets = shimSockets;

/** One call's worktree: its preopen list, and a way to close every descriptor when the call ends. */
export interface WorktreeMount {
  preopens: Array<[unknown, string]>;
  dispose(): void;
}

/**
 * Preopen `root` at {@link WORKTREE_GUEST_PATH} through the confining adapter.
 * Descriptors stop working once `isActive` turns false (an instance kept for
 * later calls cannot keep using this call's worktree).
 */
export function mountWorktree(root: string, readOnly: boolean, isActive: () => boolean): WorktreeMount {
  const adapter = new WorktreeAdapter({ root, readOnly, isActive });
  const filesystem = shimFilesystem.createFilesystem({ adapter, preopens: { [WORKTREE_GUEST_PATH]: root } });
  return {
    preopens: filesystem.preopens.getDirectories(),
    dispose() {
      filesystem.dispose();
      adapter.dispose();
    },
  };
}


/**
 * A line splitter for one captured stream. Guests flush mid-line (a JS
 * guest's console.log writes the text, flushes, then writes the newline), so
 * flushes do not end a line; only a newline or the end of the call does.
 */
function capturedStream(stream: 'stdout' | 'stderr', output: GuestCallScope): CliStreamHandler & { endOfCall(): void } {
  const decoder = new TextDecoder();
  let pending = '';
  return {
    write(bytes) {
      pending += decoder.decode(bytes, { stream: true });
      if (!pending.includes('\n')) return;
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) output.line(stream, line.endsWith('\r') ? line.slice(0, -1) : line);
    },
    flush() {},
    blockingFlush() {},
    drop() {},
    endOfCall() {
      pending += decoder.decode();
      if (pending !== '') output.line(stream, pending);
      pending = '';
    },
  };
}

/** One instance's WASI imports, and a way to flush output it left without a newline. */
export interface WasiCapabilities {
  imports: Record<string, Namespace>;
  flushOutput(): void;
  /**
   * The host objects a guest's handles may point to that hold nothing of a
   * call once its output is flushed: the stdout and stderr streams (one
   * object each per instance). A reset may drop handles a call made to them
   * (worker/instance-snapshot.ts); a handle to anything else means a new instance.
   */
  resettable: ReadonlySet<unknown>;
  /**
   * Put the stdout and stderr streams back as a new instance has them (no
   * write permit left), and forget the instance's insecure seed (a restored
   * instance draws a fresh one, as a new instance does); false when that is
   * impossible (the guest closed one: a new instance's are open).
   */
  resetStreams(): boolean;
}

/** Build one instance's WASI imports, reading the current call from `scope`. */
export function createWasiImports(scope: GuestCallScope): WasiCapabilities {
  const stdout = capturedStream('stdout', scope);
  const stderr = capturedStream('stderr', scope);
  const guestCli = shimCli.createCli({ stdout, stderr, environment: {}, arguments: [] });
  const http = createSyncHttp((request) => scope.http(request));
  // This instance's insecure seed: drawn when first asked, forgotten on a reset.
  let seed: [bigint, bigint] | undefined;
  const imports: Record<string, Namespace> = {
    'wasi:cli/environment': {
      getEnvironment: () => scope.env().map(([key, value]) => [key, value]),
      getArguments: () => [],
      initialCwd: () => undefined,
    },
    'wasi:cli/exit': guestCli.exit!,
    'wasi:cli/stdin': guestCli.stdin!,
    'wasi:cli/stdout': guestCli.stdout!,
    'wasi:cli/stderr': guestCli.stderr!,
    'wasi:cli/terminal-input': guestCli.terminalInput!,
    'wasi:cli/terminal-output': guestCli.terminalOutput!,
    'wasi:cli/terminal-stdin': guestCli.terminalStdin!,
    'wasi:cli/terminal-stdout': guestCli.terminalStdout!,
    'wasi:cli/terminal-stderr': guestCli.terminalStderr!,
    'wasi:clocks/monotonic-clock': monotonicClock,
    'wasi:clocks/wall-clock': shimClocks.wallClock,
    'wasi:filesystem/types': shimFilesystem.types,
    'wasi:filesystem/preopens': { getDirectories: () => scope.preopens() },
    'wasi:io/error': shimIo.error,
    'wasi:io/poll': pollNamespace,
    'wasi:io/streams': shimIo.streams,
    'wasi:random/random': shimRandom.random,
    'wasi:random/insecure': shimRandom.insecure,
    'wasi:random/insecure-seed': {
      insecureSeed: (): [bigint, bigint] => {
        if (seed === undefined) {
          const words = randomFillSync(new BigUint64Array(2));
          seed = [words[0]!, words[1]!];
        }
        return seed;
      },
    },
    'wasi:http/types': http.types,
    'wasi:http/outgoing-handler': http.outgoingHandler,
    ...socketImports(scope),
  };
  const streams = cliOutputStreams(guestCli);
  return {
    imports,
    flushOutput() {
      stdout.endOfCall();
      stderr.endOfCall();
    },
    resettable: new Set<unknown>([streams.stdout, streams.stderr]),
    resetStreams() {
      seed = undefined;
      if (!streams.stdout.open || !streams.stderr.open) return false;
      streams.stdout.flush();
      streams.stderr.flush();
      return true;
    },
  };
}

// The list the loader checks components against must match what is provided here.
{
  const provided = Object.keys(createWasiImports(EMPTY_SCOPE).imports).sort().join();
  if (provided !== [...SUPPORTED_WASI_IMPORTS].sort().join()) {
    throw new Error('sandbox/wasi: provided imports differ from SUPPORTED_WASI_IMPORTS');
  }
}

/** The log level captured output is reported at. */
export function levelForStream(stream: 'stdout' | 'stderr'): LogLevel {
  return stream === 'stderr' ? 'warn' : 'info';
}
