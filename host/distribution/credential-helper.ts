/**
 * Running a docker credential helper (`credsStore` / `credHelpers` in
 * docker's config.json): `docker-credential-NAME get`, the server URL on
 * stdin, `{"ServerURL", "Username", "Secret"}` on stdout — the protocol of
 * docker/docker-credential-helpers.
 *
 * Guarantees: the helper is looked up on PATH by a name that is only
 * letters, digits, `.`, `_` and `-` (a config cannot name a path), run
 * without a shell, under a time limit (`distribution.credential_helper_timeout_ms`)
 * and an output cap (`distribution.credential_helper_max_bytes`), and killed
 * past either; what it prints on stdout is never logged or put in an error
 * message, whatever its exit status (a failed helper's message has only its
 * name, its exit and the first line of its stderr, which docker's helpers use
 * for their errors). "credentials not found" (on either stream) is no
 * credential, as for docker.
 * Not guaranteed: what the helper itself does (it is the user's program,
 * trusted as docker trusts it).
 */
import { spawn } from 'node:child_process';

/** A user name and password for one registry. */
export interface Credential {
  username: string;
  password: string;
}

/** Default time a helper may take: 30 s (helpers such as ecr-login ask a cloud API). */
export const DEFAULT_CREDENTIAL_HELPER_TIMEOUT_MS = 30_000;
/** Default cap on what a helper prints: 64 KiB (a token is a few KiB). */
export const DEFAULT_CREDENTIAL_HELPER_MAX_BYTES = 64 * 1024;

/** The limits a helper runs under. */
export interface HelperLimits {
  timeoutMs: number;
  maxBytes: number;
  /** The load's signal: its abort kills the helper. */
  signal?: AbortSignal | undefined;
}

/** Why a helper gave no usable credential (the caller turns it into SOURCE_UNAVAILABLE). */
export class CredentialHelperError extends Error {
  override readonly name = 'CredentialHelperError';
  constructor(message: string, readonly limitHit?: 'credential_helper_timeout_ms' | 'credential_helper_max_bytes') {
    super(message);
  }
}

const HELPER_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
const NOT_FOUND = /credentials not found/i;

/**
 * Ask `docker-credential-NAME` for the credential of `serverUrl`: undefined when it has none.
 * @throws CredentialHelperError when it cannot be run, fails, is over a limit, or prints something unusable.
 */
export async function runCredentialHelper(name: string, serverUrl: string, limits: HelperLimits, env: NodeJS.ProcessEnv): Promise<Credential | undefined> {
  const program = `docker-credential-${name}`;
  if (!HELPER_NAME.test(name)) throw new CredentialHelperError(`the credential helper name ${JSON.stringify(name)} in docker's config.json is not a plain name`);
  const { code, stdout, stderr } = await new Promise<{ code: number | null; stdout: Buffer; stderr: string }>((resolve, reject) => {
    // Its own process group, so a limit kills what it started too (a shell's `sleep` would hold the pipes open).
    const child = spawn(program, ['get'], { env, stdio: ['pipe', 'pipe', 'pipe'], shell: false, detached: true });
    const out: Buffer[] = [];
    let outBytes = 0;
    let err = '';
    let settled = false;
    const settle = (act: () => void): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      limits.signal?.removeEventListener('abort', onAbort);
      act();
    };
    const stop = (error: CredentialHelperError): void => settle(() => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
      child.stdout.destroy();
      child.stderr.destroy();
      reject(error);
    });
    const timer = setTimeout(() => stop(new CredentialHelperError(`${program} did not answer within ${limits.timeoutMs} ms (distribution.credential_helper_timeout_ms)`, 'credential_helper_timeout_ms')), limits.timeoutMs);
    const onAbort = (): void => stop(new CredentialHelperError(`${program} was stopped: the load was aborted`));
    if (limits.signal?.aborted === true) onAbort();
    else limits.signal?.addEventListener('abort', onAbort, { once: true });
    child.stdout.on('data', (chunk: Buffer) => {
      outBytes += chunk.byteLength;
      if (outBytes > limits.maxBytes) stop(new CredentialHelperError(`${program} printed more than ${limits.maxBytes} bytes (distribution.credential_helper_max_bytes)`, 'credential_helper_max_bytes'));
      else out.push(chunk);
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      if (err.length < 4096) err += chunk;
    });
    child.stdin.on('error', () => undefined);
    child.on('error', (error: NodeJS.ErrnoException) => settle(() => {
      reject(new CredentialHelperError(error.code === 'ENOENT' ? `docker's config.json names the credential helper ${name}, but ${program} is not on PATH` : `cannot run ${program}: ${error.message}`));
    }));
    child.on('close', (exit) => settle(() => resolve({ code: exit, stdout: Buffer.concat(out), stderr: err })));
    child.stdin.end(serverUrl);
  });
  const text = stdout.toString('utf8');
  if (code !== 0) {
    if (NOT_FOUND.test(text) || NOT_FOUND.test(stderr)) return undefined;
    // Only stderr is quoted: stdout is where a helper puts its answer, and one that failed after printing it
    // (or printed it and exited non-zero) would otherwise carry the secret into the message and every log of it.
    const line = stderr.trim().split('\n')[0]?.slice(0, 200) ?? '';
    throw new CredentialHelperError(`${program} get failed (exit ${String(code)})${line === '' ? '' : `: ${line}`}`);
  }
  let answer: { Username?: unknown; Secret?: unknown };
  try {
    answer = JSON.parse(text) as typeof answer;
  } catch {
    throw new CredentialHelperError(`${program} get printed something that is not JSON`);
  }
  if (typeof answer.Username !== 'string' || typeof answer.Secret !== 'string' || answer.Secret === '') {
    throw new CredentialHelperError(`${program} get printed no Username and Secret`);
  }
  if (answer.Username === '<token>') {
    throw new CredentialHelperError(`${program} gives an identity token (Username "<token>"), which toolhost does not exchange: set distribution.auth for this registry`);
  }
  return { username: answer.Username, password: answer.Secret };
}
