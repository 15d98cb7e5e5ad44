/**
 * Fetching a component from an https URL (http for loopback hosts and
 * insecure registries only, on every hop) and checking its bytes against the
 * sha256 the source names, while they stream, under the size cap. Redirects
 * are followed by net/redirects.ts (every hop checked again).
 */
import { createHash } from 'node:crypto';
import { reportProgress } from '../base/progress.js';
import { EgressError } from '../net/errors.js';
import { followRedirectsStream } from '../net/redirects.js';
import { SourceChecker } from './checker.js';
import { integrity, unavailable, untrusted } from './errors.js';
import type { UrlSource } from './source.js';

/** Fetch the bytes of a URL source and check them against its digest. */
export async function fetchUrl(source: UrlSource, options: { insecure: readonly string[]; maxBytes: number; ca?: string; signal?: AbortSignal }): Promise<Uint8Array> {
  const url = new URL(source.url);
  const checker = new SourceChecker(url.hostname, options.insecure);
  const hash = createHash('sha256');
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    const response = await followRedirectsStream({
      method: 'GET',
      url: source.url,
      headers: [],
      maxBodyBytes: options.maxBytes,
      ...(options.ca === undefined ? {} : { ca: options.ca }),
      ...(options.signal === undefined ? {} : { signal: options.signal }),
    }, checker);
    if (response.status !== 200) {
      await response.body.close();
      throw unavailable(source.text, `the server answered ${response.status}`, { status: response.status });
    }
    const length = Number(response.headers.find(([key]) => key === 'content-length')?.[1] ?? 0);
    for await (const chunk of response.body) {
      hash.update(chunk);
      chunks.push(chunk);
      total += chunk.byteLength;
      reportProgress({ kind: 'bytes', task: source.text, stage: 'downloading', done: total, total: Number.isSafeInteger(length) && length > 0 ? length : 0 });
    }
  } catch (error) {
    if (!(error instanceof EgressError)) throw error;
    if (error.kind === 'body-too-large') {
      throw integrity('too-large', source.text, `the component is over the cap of ${options.maxBytes} bytes (distribution.max_component_bytes)`, { limitHit: 'max_component_bytes' });
    }
    if (error.toolhostCode === 'NETWORK_DENIED' && error.decision?.cause === 'scheme') throw untrusted('insecure', source.text, error.message);
    throw unavailable(source.text, error.message, { network: error.kind }, error);
  }
  const actual = `sha256:${hash.digest('hex')}`;
  if (actual !== source.digest) {
    throw integrity('digest-mismatch', source.text, `the server sent bytes whose sha256 is ${actual}, not the pinned ${source.digest}`, { expected: source.digest, actual });
  }
  const bytes = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return bytes;
}
