/**
 * `startGrpcServer`: the sw4rm ToolService over a registry, on a TCP port.
 *
 * ```ts
 * const server = await startGrpcServer(registry, { port: 50063 });   // 127.0.0.1 by default
 * // ...
 * await server.close();   // graceful, then forced after `shutdownTimeoutMs`
 * ```
 *
 * Beside ToolService it serves `grpc.health.v1.Health` (the maintained
 * `grpc-health-check`: "" and `sw4rm.tool.ToolService` SERVING, NOT_SERVING
 * once closing) and server reflection (`@grpc/reflection`, v1 and v1alpha),
 * so `grpcurl` and load balancers work. Reflection describes the real `.proto` files (reflection-files.ts:
 * `sw4rm/tool.proto` importing `google/protobuf/duration.proto`) and its own service, so strict clients
 * (Python's descriptor pool) accept what it serves. Health stays open without a token,
 * like `/healthz`: load balancers probe without credentials, and it tells only
 * SERVING or not. Reflection needs the token when one is configured (it
 * describes every service and message; `grpcurl -H 'authorization: Bearer ...'`
 * sends it): UNAUTHENTICATED otherwise.
 * Messages are bounded both ways (`maxReceiveMessageBytes`,
 * `maxSendMessageBytes`, default 4 MiB each: RESOURCE_EXHAUSTED beyond).
 *
 * Connections are bounded: the port is a plain `net.Server` of ours, gated in
 * total and per client address (connection-gate.ts: past a cap a connection
 * is closed at once, counted), which hands each connection it accepts to
 * grpc-js through `createConnectionInjector` (grpc-js exposes no per-socket
 * hook on ports it binds itself). The gate also caps each network (IPv4 /24),
 * closes a connection that has not sent its HTTP/2 preface within
 * `firstByteTimeoutMs` (grpc-js never closes one), and reaps idle connections
 * when the server is full. A connection with no call open for
 * `idleTimeoutMs` is closed by grpc-js
 * (`grpc.max_connection_idle_ms`, GOAWAY first; clients reconnect by themselves).
 */
import { Server, ServerCredentials, type ChannelOptions, type ServerDuplexStream, type UntypedServiceImplementation } from '@grpc/grpc-js';
import { createServer as createNetServer, type Server as NetServer } from 'node:net';
import { loadSync, type PackageDefinition } from '@grpc/proto-loader';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { ReflectionService } from '@grpc/reflection';
import { HealthImplementation, protoPath as healthProtoPath } from 'grpc-health-check';
import { loadToolPackageDefinition, TOOL_PROTO_PACKAGE, TOOL_SERVICE_NAME, toolServiceDefinition } from './proto.js';
import { definedLimits, gateConnections, HTTP2_PREFACE_BYTES, resolveConnectionLimits } from '../connection-gate.js';
import { createAuthenticator } from '../auth/authenticator.js';
import type { Authenticator } from '../auth/caller.js';
import { authenticateGrpc } from './authenticate.js';
import { createToolServiceHandlers, type GrpcToolSource, type ToolServiceOptions } from './service.js';
import { toServiceError } from './status.js';
import { descriptorsOf, realFileDescriptors } from './reflection-files.js';

/** The port sw4rm's docs use for ToolService. */
export const DEFAULT_GRPC_PORT = 50063;
export const DEFAULT_GRPC_HOST = '127.0.0.1';

export interface GrpcServerOptions extends ToolServiceOptions {
  /** The address to listen on (default 127.0.0.1: loopback only). */
  host?: string;
  /** The port (default 50063; 0 picks a free one, reported in the result). */
  port?: number;
  /** Transport security (default: insecure, which is why the default host is loopback). */
  credentials?: ServerCredentials;
  /** How long `close()` lets calls in flight finish before it cancels them (ms, default 5000). */
  shutdownTimeoutMs?: number;
  /** grpc-js server options (the message limits below win over theirs). */
  channelOptions?: ChannelOptions;
  /** Largest message accepted, in bytes (default 4 MiB). */
  maxReceiveMessageBytes?: number;
  /** Largest message sent, in bytes (default 4 MiB). */
  maxSendMessageBytes?: number;
  /** Serve grpc.health.v1 (default true). */
  health?: boolean;
  /** Serve server reflection (default true). */
  reflection?: boolean;
  /** TCP connections open at once; past it a new one is closed at once (default 4096, or a quarter of the open-file limit when lower). */
  maxConnections?: number;
  /** TCP connections one client address (an IPv6 /64) may hold; past it a new one is closed at once (default 256). */
  maxConnectionsPerClient?: number;
  /** TCP connections one network (IPv4 /24, IPv6 /48 by default) may hold; past it a silent one of the network makes room, else the new one is closed (default 1024). */
  maxConnectionsPerNetwork?: number;
  /** Prefix lengths that make a network (defaults 24 and 48). */
  networkPrefixV4?: number;
  networkPrefixV6?: number;
  /** A connection that has not sent its HTTP/2 preface within this long, in ms, is closed (default 5000). */
  firstByteTimeoutMs?: number;
  /** A connection with no call open this long, in ms, is closed (GOAWAY first; default 300000). */
  idleTimeoutMs?: number;
}

/** The default of {@link GrpcServerOptions.idleTimeoutMs}. */
export const DEFAULT_GRPC_IDLE_TIMEOUT_MS = 300_000;

export const DEFAULT_GRPC_MAX_MESSAGE_BYTES = 4 * 1024 * 1024;

export interface GrpcServerHandle {
  /** The port bound (the chosen one when 0 was asked for). */
  readonly port: number;
  readonly host: string;
  /** `host:port`, as a client's target. */
  readonly address: string;
  /** Stop accepting calls, let the ones in flight finish (bounded), then stop. Idempotent. */
  close(): Promise<void>;
}

/** Serve the registry's tools as sw4rm's `sw4rm.tool.ToolService`. */
export async function startGrpcServer(registry: GrpcToolSource, options: GrpcServerOptions = {}): Promise<GrpcServerHandle> {
  const host = options.host ?? DEFAULT_GRPC_HOST;
  const port = options.port ?? DEFAULT_GRPC_PORT;
  if (typeof host !== 'string' || host.length === 0) throw new TypeError('options.host must be a non-empty string');
  if (!Number.isInteger(port) || port < 0 || port > 65_535) throw new TypeError('options.port must be an integer in 0..65535');
  const shutdownTimeoutMs = options.shutdownTimeoutMs ?? 5_000;
  if (!Number.isFinite(shutdownTimeoutMs) || shutdownTimeoutMs < 0) throw new TypeError('options.shutdownTimeoutMs must be a non-negative number');

  const maxReceive = options.maxReceiveMessageBytes ?? DEFAULT_GRPC_MAX_MESSAGE_BYTES;
  const maxSend = options.maxSendMessageBytes ?? DEFAULT_GRPC_MAX_MESSAGE_BYTES;
  for (const [name, value] of [['maxReceiveMessageBytes', maxReceive], ['maxSendMessageBytes', maxSend]] as const) {
    if (!Number.isInteger(value) || value < 1) throw new TypeError(`options.${name} must be a positive integer`);
  }

  const connectionLimits = resolveConnectionLimits(definedLimits(options));
  const idleTimeoutMs = options.idleTimeoutMs ?? DEFAULT_GRPC_IDLE_TIMEOUT_MS;
  if (!Number.isInteger(idleTimeoutMs) || idleTimeoutMs < 1) throw new TypeError('options.idleTimeoutMs must be a positive integer');

  const {
    host: _host, port: _port, credentials: _credentials, shutdownTimeoutMs: _shutdown, channelOptions, maxReceiveMessageBytes: _r, maxSendMessageBytes: _s,
    health: withHealth, reflection: withReflection, maxConnections: _mc, maxConnectionsPerClient: _mcc, maxConnectionsPerNetwork: _mcn, networkPrefixV4: _p4, networkPrefixV6: _p6,
    firstByteTimeoutMs: _first, idleTimeoutMs: _idle, ...serviceOptions
  } = options;
  // One authenticator for the ToolService and reflection (one key set, when OAuth is on).
  const auth = serviceOptions.authenticator ?? createAuthenticator(serviceOptions);
  const handlers = createToolServiceHandlers(registry, { ...serviceOptions, authenticator: auth });
  const server = new Server({
    'grpc.max_connection_idle_ms': idleTimeoutMs,
    ...channelOptions,
    'grpc.max_receive_message_length': maxReceive,
    'grpc.max_send_message_length': maxSend,
  });
  server.addService(toolServiceDefinition(), handlers);
  let health: HealthImplementation | undefined;
  if (withHealth !== false) {
    health = new HealthImplementation({ '': 'SERVING', [TOOL_SERVICE_NAME]: 'SERVING' });
    health.addToServer(server);
  }
  if (withReflection !== false) {
    const reflection = new ReflectionService(reflectedFiles(withHealth !== false));
    reflection.addToServer(auth === undefined ? server : {
      addService: (definition, implementation) => server.addService(definition, guarded(implementation, auth, (reason) => options.limitMetrics?.refused('grpc', reason))),
    });
  }
  const hostPart = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  const injector = server.createConnectionInjector(options.credentials ?? ServerCredentials.createInsecure());
  const front: NetServer = createNetServer();
  gateConnections(front, connectionLimits, {
    refused: (reason) => options.limitMetrics?.refused('grpc', reason),
    closed: (reason) => options.limitMetrics?.connectionClosed?.('grpc', reason),
  }, { accepted: (socket) => injector.injectConnection(socket), firstBytes: HTTP2_PREFACE_BYTES });
  const bound = await new Promise<number>((resolve, reject) => {
    front.once('error', reject);
    front.listen(port, host, () => {
      front.off('error', reject);
      const address = front.address();
      resolve(typeof address === 'object' && address !== null ? address.port : port);
    });
  });
  const address = `${hostPart}:${bound}`;
  registry.logger.info({ address }, 'gRPC ToolService listening');

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    health?.setStatus('', 'NOT_SERVING');
    health?.setStatus(TOOL_SERVICE_NAME, 'NOT_SERVING');
    closing ??= new Promise<void>((resolve) => {
      // No new connections; the open ones are grpc-js's to drain.
      front.close();
      // Past the bound, calls in flight are cancelled (their clients see CANCELLED; the calls end CANCELLED).
      const timer = setTimeout(() => {
        server.forceShutdown();
        injector.destroy();
        resolve();
      }, shutdownTimeoutMs);
      timer.unref?.();
      server.tryShutdown(() => {
        clearTimeout(timer);
        resolve();
      });
    }).then(() => {
      registry.logger.info({ address }, 'gRPC ToolService stopped');
    });
    return closing;
  };
  return { port: bound, host, address, close };
}

const REFLECTION_PROTOS = ['v1', 'v1alpha'].map((version) => ({
  path: join(dirname(createRequire(import.meta.url).resolve('@grpc/reflection')), '..', 'proto', 'grpc', 'reflection', version, 'reflection.proto'),
  pkg: `grpc.reflection.${version}`,
  file: `grpc/reflection/${version}/reflection.proto`,
}));

/**
 * What reflection describes, as the real `.proto` files (reflection-files.ts): the ToolService
 * (`sw4rm/tool.proto`, importing `google/protobuf/duration.proto`), health when it is served, and the reflection
 * service itself, so a strict client can build every service it lists from the answers alone.
 */
function reflectedFiles(withHealth: boolean): PackageDefinition {
  const options = { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true };
  const definitions: PackageDefinition[] = [loadToolPackageDefinition(), ...REFLECTION_PROTOS.map(({ path }) => loadSync(path, options))];
  const packageFiles: Record<string, string> = { [TOOL_PROTO_PACKAGE]: 'sw4rm/tool.proto' };
  for (const { pkg, file } of REFLECTION_PROTOS) packageFiles[pkg] = file;
  if (withHealth) {
    definitions.push(loadSync(healthProtoPath, options));
    packageFiles['grpc.health.v1'] = 'grpc/health/v1/health.proto';
  }
  const files = realFileDescriptors(descriptorsOf(definitions), packageFiles);
  // ReflectionService reads only `fileDescriptorProtos` of each entry.
  return { files: { fileDescriptorProtos: files } } as unknown as PackageDefinition;
}

/** Reflection's handlers behind the tokens: a stream without a valid one ends UNAUTHENTICATED before any answer. */
function guarded(implementation: UntypedServiceImplementation, auth: Authenticator, refused: (reason: string) => void): UntypedServiceImplementation {
  const wrapped: UntypedServiceImplementation = {};
  for (const [name, handler] of Object.entries(implementation)) {
    wrapped[name] = ((stream: ServerDuplexStream<unknown, unknown>) => {
      authenticateGrpc(auth, stream, refused).then((who) => {
        if ('refused' in who) {
          stream.emit('error', who.refused);
          return;
        }
        (handler as (stream: ServerDuplexStream<unknown, unknown>) => void)(stream);
      }, (error: unknown) => stream.emit('error', toServiceError({ code: 'INTERNAL', message: String(error) })));
    }) as UntypedServiceImplementation[string];
  }
  return wrapped;
}
