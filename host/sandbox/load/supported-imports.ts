/**
 * The interfaces a component may import, as jco's instantiation glue names
 * them (unversioned). A component importing anything else is refused at load
 * time with COMPONENT_INVALID, rather than failing on its first call.
 * The capability layer (wasi/capabilities.ts) satisfies exactly these.
 */
export const SUPPORTED_WASI_IMPORTS: readonly string[] = [
  'wasi:cli/environment',
  'wasi:cli/exit',
  'wasi:cli/stdin',
  'wasi:cli/stdout',
  'wasi:cli/stderr',
  'wasi:cli/terminal-input',
  'wasi:cli/terminal-output',
  'wasi:cli/terminal-stdin',
  'wasi:cli/terminal-stdout',
  'wasi:cli/terminal-stderr',
  'wasi:clocks/monotonic-clock',
  'wasi:clocks/wall-clock',
  'wasi:filesystem/types',
  'wasi:filesystem/preopens',
  'wasi:io/error',
  'wasi:io/poll',
  'wasi:io/streams',
  'wasi:random/random',
  'wasi:random/insecure',
  'wasi:random/insecure-seed',
  'wasi:http/types',
  'wasi:http/outgoing-handler',
  'wasi:sockets/network',
  'wasi:sockets/instance-network',
  'wasi:sockets/tcp',
  'wasi:sockets/tcp-create-socket',
  'wasi:sockets/udp',
  'wasi:sockets/udp-create-socket',
  'wasi:sockets/ip-name-lookup',
];

export const SUPPORTED_HOST_IMPORTS: ReadonlySet<string> = new Set([
  ...SUPPORTED_WASI_IMPORTS,
  'toolhost:tool/host',
  'toolhost:tool/types',
]);
