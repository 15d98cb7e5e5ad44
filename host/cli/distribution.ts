/**
 * The CLI's distribution pieces: the trust flags `list`, `call` and `serve`
 * share (`--verify-key FILE`, repeatable; `--insecure-skip-verify`), and
 * the warning `list` prints for components loaded unverified, and
 * `toolhost publish FILE oci://REGISTRY/REPO:TAG [--sign-key KEY.pem]`, which
 * prints a JSON report (the pinned reference, digests, the signature tag).
 */
import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import type { Host } from '../compose/host.js';
import { UsageError } from './usage-error.js';

/** The trust flags as commander parses them. */
export interface TrustFlags {
  verifyKey?: string[];
  insecureSkipVerify?: boolean;
}

/** A repeatable option's values (commander's collector). */
export function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

/** Add the trust flags to a command (returns it, for chaining). */
export function addTrustOptions(command: Command): Command {
  return command
    .option('--verify-key <file>', 'a PEM public key (cosign.pub) whose signature an oci:// component may carry (repeatable)', collect)
    .option('--insecure-skip-verify', 'load oci:// components without verifying a signature (logged as a warning)');
}

/** The flags as loadHostConfig's `trust`. */
export function trustOf(flags: TrustFlags): { keys: string[]; skip: boolean } {
  return { keys: flags.verifyKey ?? [], skip: flags.insecureSkipVerify === true };
}

/**
 * Run `work` with a signal that SIGINT or SIGTERM (Ctrl-C) aborts while it runs: remote loads stop at once and end
 * with CANCELLED, instead of the process dying mid-write or waiting for a stalled registry.
 */
export async function interruptible<T>(work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  const onSignal = (): void => {
    // The handler is gone after the first signal: a second one ends the process as it always did (a local component
    // being transpiled does not watch the signal).
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    process.stderr.write('toolhost: stopping the remote loads in progress (again to quit at once)\n');
    controller.abort();
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    return await work(controller.signal);
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

/** The components loaded without a verified signature: by source, and the component name each gives its tools. */
export async function unverifiedComponents(host: Host, loads: readonly string[]): Promise<Map<string, string>> {
  const { unverifiedSources } = await import('../distribution/options.js');
  const { config } = host;
  const global = config.distribution.verify;
  const sources = unverifiedSources([...config.tools.map((tool) => ({ path: tool.path, verify: tool.options.verify })), ...loads.map((path) => ({ path }))], global);
  // A tool's `source` is its component's name: an OCI repository's last segment.
  return new Map(sources.map((source) => [source.replace(/[@:][^/]*$/, '').split('/').pop()!, source]));
}

/** A component's versioned imports and exports, from its world (component-config.ts). */
async function componentInterfaces(bytes: Uint8Array, file: string): Promise<{ imports: string[]; exports: string[] }> {
  const [{ componentWit }, { interfacesOfWit }, { ToolhostError }] = await Promise.all([import('@bytecodealliance/jco'), import('../distribution/component-config.js'), import('../base/errors.js')]);
  try {
    return interfacesOfWit(await componentWit(bytes));
  } catch (error) {
    throw new ToolhostError('COMPONENT_INVALID', `"${file}" is not a valid component: ${String((error as Error).message ?? error).split('\n')[0]}`);
  }
}

interface PublishFlags {
  signKey?: string;
  insecureRegistry?: string[];
  config?: string;
}

async function publish(file: string, target: string, flags: PublishFlags): Promise<number> {
  const { parseSource } = await import('../distribution/source.js');
  const source = parseSource(target);
  if (source.kind !== 'oci' || source.tag === undefined) throw new UsageError(`publish needs a tag reference oci://REGISTRY/REPO:TAG, not ${target}`);
  const [{ publishComponent }, { readSigningKey, signingKeyNeedsPassword }, { credentialFor }, { sourceFromBytes }, { loadHostConfig }, { cosignPassword }] = await Promise.all([
    import('../distribution/publish.js'),
    import('../distribution/cosign.js'),
    import('../distribution/credentials.js'),
    import('../sandbox/load/component-file.js'),
    import('../compose/host.js'),
    import('./password.js'),
  ]);
  const { config } = await loadHostConfig(flags.config === undefined ? {} : { configPath: flags.config });
  // cosign's encrypted cosign.key takes its password from COSIGN_PASSWORD, or a prompt on a terminal.
  const password = flags.signKey !== undefined && signingKeyNeedsPassword(flags.signKey) ? await cosignPassword(flags.signKey) : undefined;
  const signingKey = flags.signKey === undefined ? undefined : readSigningKey(flags.signKey, password);
  const component = sourceFromBytes(new Uint8Array(await readFile(file)), file);
  // The config names what the component exports and imports, versioned, and the world it targets: read from its
  // own world (jco's componentWit); a file that is no component is refused here, before anything is pushed.
  const interfaces = await componentInterfaces(component.bytes, file);
  const credential = await credentialFor(source.registry, config.distribution.auth, process.env, { helperTimeoutMs: config.distribution.credentialHelperTimeoutMs, helperMaxBytes: config.distribution.credentialHelperMaxBytes }, target);
  const report = await publishComponent(component.bytes, source, {
    exports: interfaces.exports,
    imports: interfaces.imports,
    insecureRegistries: [...(config.distribution.insecureRegistries ?? []), ...(flags.insecureRegistry ?? [])],
    ...(signingKey === undefined ? {} : { signingKey }),
    ...(credential === undefined ? {} : { credential }),
    ...(config.distribution.tokenRealms === undefined ? {} : { tokenRealms: config.distribution.tokenRealms }),
  });
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  return 0;
}

/** `toolhost publish`. */
export function addPublishCommand(root: Command): void {
  root
    .command('publish')
    .description('push a component to an OCI registry in the CNCF Wasm layout, signed with --sign-key in cosign\'s format and as a Sigstore bundle referrer')
    .argument('<file>', 'the component file')
    .argument('<target>', 'oci://REGISTRY/REPO:TAG')
    .option('--sign-key <key.pem>', 'sign the pushed manifest with this ECDSA P-256 key (PKCS#8 PEM, or cosign\'s encrypted cosign.key: password from COSIGN_PASSWORD or a prompt)')
    .option('--insecure-registry <host:port>', 'reach this registry over plain http (repeatable; loopback always may be)', collect)
    .option('--config <path>', 'the config file (distribution.auth, insecure_registries, the cache)')
    .option('--json', 'the JSON report, as always, without the progress display a terminal gets')
    .action(async (file: string, target: string, flags: PublishFlags) => {
      process.exitCode = await publish(file, target, flags);
    });
}
