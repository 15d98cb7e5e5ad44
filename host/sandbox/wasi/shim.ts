/**
 * The one module that reaches into @bytecodealliance/preview2-shim's internals.
 * Written against preview2-shim 0.26.1 (with jco 1.35); re-check every item
 * below when either moves.
 *
 * What it loads, and why:
 * - The shim's pure-JS *browser* build (`dist/browser/*.js`), not its Node
 *   build: the browser interfaces are handler-based and touch no host
 *   resource, whereas the Node build hands guests the real environment,
 *   stdio, filesystem and network through an I/O worker. Under Node the
 *   package's `exports` resolve every subpath to the Node build, so the
 *   browser files are imported by URL, relative to the package entry
 *   (`import.meta.resolve`). That layout is not a public API.
 * - `io.js`: `inputStreamCreate`, `outputStreamCreate`, `pollableCreate` and
 *   `ioErrorCreate` (undocumented factories) are how a host-side stream,
 *   pollable or io error becomes a wasi:io resource. jco's glue checks
 *   `instanceof` against the classes in the `wasi:io/*` imports, so every
 *   stream, pollable and error the capability layer hands out (filesystem,
 *   http, clocks) must come from this ONE module instance: load it here,
 *   import it from here.
 * - `filesystem.js`: `createFilesystem({ adapter, preopens })` binds a
 *   wasi:filesystem to our confining adapter. Its public `Descriptor` and
 *   `DirectoryEntryStream` classes keep their implementation in a private
 *   field and forward only wasi methods, not `[Symbol.dispose]` (which jco
 *   calls when a guest drops an owned handle): {@link hookGuestDrop} gives
 *   them one, so the worktree can close fds on drop.
 * - `in-memory-filesystem.js`: `UNWRAP_DESCRIPTOR`, the symbol under which a
 *   wrapper around a descriptor implementation (e.g. a Proxy) hands back the
 *   real one.
 * - `cli.js`, `clocks.js`, `random.js`, `sockets.js`: namespaces passed
 *   through (cli via `createCli` with captured stdout/stderr), plus the
 *   resource classes of wasi:sockets, whose constructors we refuse.
 * - The wasi:filesystem value types (`interfaces/wasi-filesystem-types`, a
 *   documented typings path) are re-exported so nothing else names the package.
 *
 * Traps found in this version (see ARCHITECTURE.md for the full list):
 * - `Pollable.block` returns a promise (it expects JSPI); capabilities.ts
 *   replaces it with a synchronous wait through {@link replacePollableBlock}.
 * - The shim's filesystem-error-code reads an io error's `payload.code` as a
 *   Node error code.
 */
export type {
  Advice,
  Datetime,
  DescriptorFlags,
  DescriptorStat,
  DescriptorType,
  DirectoryEntry,
  ErrorCode,
  MetadataHashValue,
  NewTimestamp,
  OpenFlags,
  PathFlags,
} from '@bytecodealliance/preview2-shim/interfaces/wasi-filesystem-types';

/** A wasi:io pollable made by the shim's io module. */
export interface ShimPollable {
  ready(): boolean;
  block(): unknown;
}

/** What a pollable waits on (the shim's `PollableSource`). */
export interface PollableSource {
  ready(): boolean;
  wait(): Promise<void>;
}

/** A wasi:io input-stream made by the shim's io module. */
export interface ShimInputStream {
  read(len: bigint): Uint8Array;
  blockingRead(len: bigint): Uint8Array;
}

/** A wasi:io output-stream made by the shim's io module. */
export interface ShimOutputStream {
  checkWrite(): bigint;
  write(bytes: Uint8Array): void;
  /** Ends the write permit `checkWrite` granted (the shim keeps it between calls otherwise). Throws once closed. */
  flush(): void;
  /** False once the guest dropped its handle (the shim then refuses every write). */
  readonly open: boolean;
}

/** The host side of an input-stream: the shim calls these (with the stream as `this`). */
export interface InputStreamHandler {
  read?(len: bigint): Uint8Array;
  blockingRead(len: bigint): Uint8Array;
  subscribe?(): ShimPollable;
  drop?(): void;
}

/** The host side of an output-stream: the shim calls these (with the stream as `this`). */
export interface OutputStreamHandler {
  checkWrite?(): bigint;
  write(bytes: Uint8Array): void;
  flush?(): void;
  blockingFlush?(): void;
  subscribe?(): ShimPollable;
  drop?(): void;
}

type Namespace = Record<string, unknown>;

/** `dist/browser/io.js`. */
export interface ShimIo {
  inputStreamCreate(handler: InputStreamHandler): ShimInputStream;
  outputStreamCreate(handler: OutputStreamHandler): ShimOutputStream;
  pollableCreate(source?: PollableSource): ShimPollable;
  ioErrorCreate(message: string): Error;
  poll: { Pollable: { prototype: ShimPollable } };
  streams: Namespace;
  error: Namespace;
}

/** What `createFilesystem` returns for one set of preopens. */
export interface ShimFilesystemInstance {
  types: Namespace;
  preopens: { getDirectories(): Array<[unknown, string]> };
  dispose(): void;
}

/** `dist/browser/filesystem.js` (and `UNWRAP_DESCRIPTOR` from in-memory-filesystem.js). */
export interface ShimFilesystem {
  types: Namespace & { Descriptor: { prototype: object }; DirectoryEntryStream: { prototype: object } };
  createFilesystem(options: { adapter: unknown; preopens: Record<string, unknown> }): ShimFilesystemInstance;
  UNWRAP_DESCRIPTOR: symbol;
}

/** The host side of a captured stdout/stderr (`createCli`'s stream handlers). */
export interface CliStreamHandler {
  write(bytes: Uint8Array): void;
  flush(): void;
  blockingFlush(): void;
  drop(): void;
}

/** `dist/browser/cli.js`. */
export interface ShimCli {
  createCli(config: { stdout: CliStreamHandler; stderr: CliStreamHandler; environment: Record<string, string>; arguments: string[] }): Record<string, Namespace>;
}

/** The stdout and stderr streams of one `createCli` (each is one object, handed out by every get-stdout / get-stderr). */
export function cliOutputStreams(cli: Record<string, Namespace>): { stdout: ShimOutputStream; stderr: ShimOutputStream } {
  const stdout = (cli['stdout'] as { getStdout(): ShimOutputStream }).getStdout();
  const stderr = (cli['stderr'] as { getStderr(): ShimOutputStream }).getStderr();
  return { stdout, stderr };
}

const shimEntry = import.meta.resolve('@bytecodealliance/preview2-shim');
const load = (name: string): Promise<Namespace> => import(new URL(`../browser/${name}.js`, shimEntry).href) as Promise<Namespace>;

const filesystemModule = await load('filesystem');
const inMemoryFilesystem = (await load('in-memory-filesystem')) as { UNWRAP_DESCRIPTOR: symbol };

export const shimIo = (await load('io')) as unknown as ShimIo;
export const shimFilesystem: ShimFilesystem = {
  types: filesystemModule.types as ShimFilesystem['types'],
  createFilesystem: filesystemModule.createFilesystem as ShimFilesystem['createFilesystem'],
  UNWRAP_DESCRIPTOR: inMemoryFilesystem.UNWRAP_DESCRIPTOR,
};
export const shimCli = (await load('cli')) as unknown as ShimCli;
export const shimClocks = (await load('clocks')) as Record<'wallClock', Namespace>;
export const shimRandom = (await load('random')) as Record<'random' | 'insecure' | 'insecureSeed', Namespace>;
export const shimSockets = (await load('sockets')) as Record<'network' | 'instanceNetwork' | 'tcp' | 'udp' | 'ipNameLookup', Namespace>;

/** Replace `block` on the shim's Pollable class (every pollable in this thread) with a synchronous `block`. */
export function replacePollableBlock(block: (pollable: ShimPollable) => void): void {
  Object.defineProperty(shimIo.poll.Pollable.prototype, 'block', {
    value(this: ShimPollable): void {
      block(this);
    },
  });
}

const HOOKED = Symbol.for('toolhost.worktree-fs.drop-hook');

/**
 * Have the guest dropping a filesystem `descriptor` or `directory-entry-stream`
 * call `onDrop` with the shim's public object (then whatever dispose the
 * class had). Installed once per class; later calls do nothing.
 */
export function hookGuestDrop(resource: 'descriptor' | 'directory-entry-stream', onDrop: (publicObject: object) => void): void {
  const { prototype } = resource === 'descriptor' ? shimFilesystem.types.Descriptor : shimFilesystem.types.DirectoryEntryStream;
  if (Reflect.get(prototype, HOOKED) === true) return;
  const previous: unknown = Reflect.get(prototype, Symbol.dispose);
  Object.defineProperty(prototype, Symbol.dispose, {
    configurable: true,
    writable: true,
    value(this: object): void {
      onDrop(this);
      if (typeof previous === 'function') (previous as (this: unknown) => void).call(this);
    },
  });
  Object.defineProperty(prototype, HOOKED, { value: true });
}
