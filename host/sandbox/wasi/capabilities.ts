/**
 * The WASI imports a sandboxed component gets: built per instance, reaching
 * nothing on the real host by default.
 *
 * It is assembled from preview2-shim's pure-JS (browser) build, whose
 * interfaces are handler-based and touch no host resource, rather than its
 * Node build, which hands guests the real environment, stdio, filesystem and
 * network through an I/O worker. On top of it:
 * - environment and arguments are empty; there are no preopened directories;
 * - stdout and stderr are captured, split into lines and handed to `output`
 *   (capped), never written to the host's stdio;
 * - `exit` throws, ending only the current call;
 * - outgoing HTTP is refused with `HTTP-request-denied`, sockets with
 *   `access-denied` (valid WASI error codes, so the guest sees a clean error);
 * - polling is synchronous: guests run without JSPI, so a pollable that waits
 *   for a timer sleeps the worker thread (Atomics.wait, which costs no CPU),
 *   and one that can never become ready traps instead of hanging.
 */
import type { LogLevel } from '../../core/events.js';
import { SUPPORTED_WASI_IMPORTS } from '../supported-imports.js';

/** Where captured guest output goes. */
export interface GuestOutput {
  line(stream: 'stdout' | 'stderr', text: string): void;
}

type Namespace = Record<string, unknown>;
type Loaded = Record<'cli' | 'clocks' | 'filesystem' | 'http' | 'io' | 'random' | 'sockets', Namespace>;

const shimEntry = import.meta.resolve('@bytecodealliance/preview2-shim');
const load = (name: string): Promise<Namespace> => import(new URL(`../browser/${name}.js`, shimEntry).href) as Promise<Namespace>;
const shim: Loaded = {
  cli: await load('cli'),
  clocks: await load('clocks'),
  filesystem: await load('filesystem'),
  http: await load('http'),
  io: await load('io'),
  random: await load('random'),
  sockets: await load('sockets'),
};

interface ShimPollable {
  ready(): boolean;
  block(): unknown;
}
type PollableCreate = (source?: { ready: () => boolean; wait: () => Promise<void> }) => ShimPollable;

const io = shim.io as { poll: { Pollable: { prototype: ShimPollable } }; pollableCreate: PollableCreate; streams: Namespace; error: Namespace };
const pollableCreate = io.pollableCreate;

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
Object.defineProperty(io.poll.Pollable.prototype, 'block', {
  value(this: ShimPollable): void {
    blockUntilReady([this]);
  },
});

const pollNamespace = {
  Pollable: io.poll.Pollable,
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
  const pollable = pollableCreate({ ready: () => monotonicNow() >= deadline, wait: () => Promise.resolve() });
  timerDeadlines.set(pollable, deadline);
  return pollable;
}

const denyHttp = {
  handle(): never {
    // A plain object (not an Error) becomes the result's `err` payload in jco's glue.
    throw { tag: 'HTTP-request-denied' };
  },
};

const socketsDenied = (): never => {
  throw 'access-denied';
};

const sockets = shim.sockets as Record<'network' | 'instanceNetwork' | 'tcp' | 'udp' | 'ipNameLookup', Namespace>;
const socketImports = {
  'wasi:sockets/network': sockets.network,
  'wasi:sockets/instance-network': sockets.instanceNetwork,
  'wasi:sockets/tcp': sockets.tcp,
  'wasi:sockets/tcp-create-socket': { createTcpSocket: socketsDenied },
  'wasi:sockets/udp': sockets.udp,
  'wasi:sockets/udp-create-socket': { createUdpSocket: socketsDenied },
  'wasi:sockets/ip-name-lookup': { ...sockets.ipNameLookup, resolveAddresses: socketsDenied },
};

const filesystemShim = shim.filesystem as {
  InMemoryFilesystemAdapter: new () => unknown;
  createFilesystem(options: { adapter: unknown; preopens: Record<string, unknown> }): { types: Namespace; preopens: Namespace };
};
// No preopens: the guest sees no filesystem at all.
const noFilesystem = filesystemShim.createFilesystem({ adapter: new filesystemShim.InMemoryFilesystemAdapter(), preopens: {} });

const random = shim.random as Record<string, Namespace>;
const http = shim.http as Record<string, Namespace>;
const cli = shim.cli as {
  createCli(config: {
    stdout: StreamHandler;
    stderr: StreamHandler;
    environment: Record<string, string>;
    arguments: string[];
  }): Record<string, Namespace>;
};

interface StreamHandler {
  write(bytes: Uint8Array): void;
  flush(): void;
  blockingFlush(): void;
  drop(): void;
}

/**
 * A line splitter for one captured stream. Guests flush mid-line (a JS
 * guest's console.log writes the text, flushes, then writes the newline), so
 * flushes do not end a line; only a newline or the end of the call does.
 */
function capturedStream(stream: 'stdout' | 'stderr', output: GuestOutput): StreamHandler & { endOfCall(): void } {
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
}

/** Build one instance's WASI imports. */
export function createWasiImports(output: GuestOutput): WasiCapabilities {
  const stdout = capturedStream('stdout', output);
  const stderr = capturedStream('stderr', output);
  const guestCli = cli.createCli({ stdout, stderr, environment: {}, arguments: [] });
  const imports: Record<string, Namespace> = {
    'wasi:cli/environment': guestCli.environment!,
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
    'wasi:clocks/wall-clock': (shim.clocks as Record<string, Namespace>).wallClock!,
    'wasi:filesystem/types': noFilesystem.types,
    'wasi:filesystem/preopens': noFilesystem.preopens,
    'wasi:io/error': io.error,
    'wasi:io/poll': pollNamespace,
    'wasi:io/streams': io.streams,
    'wasi:random/random': random.random!,
    'wasi:random/insecure': random.insecure!,
    'wasi:random/insecure-seed': random.insecureSeed!,
    'wasi:http/types': http.types!,
    'wasi:http/outgoing-handler': denyHttp,
    ...socketImports,
  };
  return {
    imports,
    flushOutput() {
      stdout.endOfCall();
      stderr.endOfCall();
    },
  };
}

// The list the loader checks components against must match what is provided here.
{
  const provided = Object.keys(createWasiImports({ line() {} }).imports).sort().join();
  if (provided !== [...SUPPORTED_WASI_IMPORTS].sort().join()) {
    throw new Error('sandbox/wasi: provided imports differ from SUPPORTED_WASI_IMPORTS');
  }
}

/** The log level captured output is reported at. */
export function levelForStream(stream: 'stdout' | 'stderr'): LogLevel {
  return stream === 'stderr' ? 'warn' : 'info';
}
