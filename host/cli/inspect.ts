/**
 * `toolhost inspect`: what a component is, without registering it anywhere. A file, or a remote source
 * (`oci://…`, `https://…#sha256=…`) fetched and verified exactly as a load does (the config's trust,
 * `--verify-key`, `--insecure-skip-verify`; RemoteFetcher), then read: its WIT world and the tools it
 * describes, with their 0.2.0 metadata (title, annotations, icons).
 */
import { ToolhostError } from '../base/errors.js';
import { createDefaultLogger, silentLogger } from '../base/logger.js';
import { sourceFromBytes, sourceFromFile } from '../sandbox/load/component-file.js';
import { SandboxLoader } from '../sandbox/loader.js';
import type { TrustFlags } from './distribution.js';

export interface InspectReport {
  path: string;
  id: string;
  wit: string;
  /** A remote source: the manifest digest it was pinned to, and who signed it (`skipped` when unverified). */
  remote?: { manifestDigest?: string; signedBy: string };
  tools: Array<{
    name: string; title?: string; description: string; inputSchema: unknown; outputSchema?: unknown; idempotent: boolean; streaming: boolean;
    annotations?: Record<string, boolean>; icons?: Array<{ src: string; mimeType?: string; sizes?: string[] }>;
  }>;
}

/** A remote source's bytes, fetched and verified as `list`/`call` would load it (the lock pins it when it names it). */
async function fetchRemote(path: string, flags: TrustFlags & { config?: string }): Promise<{ bytes: Uint8Array; remote: NonNullable<InspectReport['remote']>; name: string }> {
  const [{ loadHostConfig }, { storeDirOf }, { RemoteFetcher }, { trustOf, interruptible }] = await Promise.all([
    import('../compose/host.js'), import('../compose/registry.js'), import('../distribution/fetch.js'), import('./distribution.js'),
  ]);
  const { config } = await loadHostConfig({ ...(flags.config === undefined ? {} : { configPath: flags.config }), trust: trustOf(flags) });
  const fetcher = new RemoteFetcher({ ...config.distribution, storeDir: storeDirOf(config.distribution, config.sandbox) }, createDefaultLogger(config.logLevel));
  const configured = config.tools.find((tool) => tool.path === path)?.options.verify;
  const fetched = await interruptible((signal) => fetcher.fetch(path, configured, signal));
  return { bytes: fetched.bytes, name: fetched.name, remote: { ...(fetched.manifestDigest === undefined ? {} : { manifestDigest: fetched.manifestDigest }), signedBy: fetched.signerFingerprint ?? fetched.signedBy } };
}

export async function inspectComponent(path: string, flags: TrustFlags & { config?: string } = {}): Promise<InspectReport> {
  const { isRemoteSource } = await import('../distribution/source.js');
  const fetched = isRemoteSource(path) ? await fetchRemote(path, flags) : undefined;
  const source = fetched === undefined ? await sourceFromFile(path) : sourceFromBytes(fetched.bytes, `${fetched.name}.wasm`);
  // jco loads only for a file that is a component at all (~65 ms of CPU).
  const { componentWit } = await import('@bytecodealliance/jco');
  let wit: string;
  try {
    wit = await componentWit(source.bytes);
  } catch (error) {
    throw new ToolhostError('COMPONENT_INVALID', `"${path}" is not a valid component: ${String((error as Error).message ?? error).split('\n')[0]}`);
  }
  // describe() is guest code: it runs in a sandbox worker, like any call.
  const loader = new SandboxLoader({ threads: 1 }, silentLogger);
  try {
    const loaded = await loader.loadSource(source);
    return {
      path: fetched === undefined ? source.path ?? path : path,
      id: source.id,
      wit,
      ...(fetched === undefined ? {} : { remote: fetched.remote }),
      tools: loaded.tools.map((tool) => ({
        name: tool.name,
        ...(tool.title === undefined ? {} : { title: tool.title }),
        description: tool.description,
        inputSchema: tool.inputSchema,
        ...(tool.outputSchema === undefined ? {} : { outputSchema: tool.outputSchema }),
        idempotent: tool.idempotent,
        streaming: tool.streaming,
        ...(tool.annotations === undefined ? {} : { annotations: { ...tool.annotations } as Record<string, boolean> }),
        ...(tool.icons === undefined ? {} : { icons: tool.icons.map((icon) => ({ ...icon, ...(icon.sizes === undefined ? {} : { sizes: [...icon.sizes] }) })) }),
      })),
    };
  } finally {
    await loader.close();
  }
}

/** A tool's 0.2.0 metadata as `list` and `inspect` print it for a person: lines to indent, none when it has none. */
export function metadataLines(tool: { title?: string; annotations?: object; icons?: ReadonlyArray<{ src: string; mimeType?: string; sizes?: readonly string[] }> }): string[] {
  const lines: string[] = [];
  if (tool.title !== undefined) lines.push(`title: ${tool.title}`);
  const hints = Object.entries(tool.annotations ?? {}).filter(([, value]) => value !== undefined).map(([key, value]) => `${key}=${String(value)}`);
  if (hints.length > 0) lines.push(`annotations: ${hints.join(', ')}`);
  for (const icon of tool.icons ?? []) lines.push(`icon: ${icon.src.length > 80 ? `${icon.src.slice(0, 77)}...` : icon.src}${icon.mimeType === undefined ? '' : ` (${icon.mimeType}${icon.sizes === undefined || icon.sizes.length === 0 ? '' : ` ${icon.sizes.join(' ')}`})`}`);
  return lines;
}
