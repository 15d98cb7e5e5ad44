/**
 * The password of cosign's encrypted `cosign.key`, as cosign itself gets it:
 * `COSIGN_PASSWORD` when it is set (an empty value is an empty password),
 * else asked on the terminal without echo — only when both stdin and stderr
 * are terminals; otherwise none (the key reader then says to set
 * COSIGN_PASSWORD).
 */
import { UsageError } from './usage-error.js';

/** Ask for a line on the terminal without echoing it (raw mode: Enter ends it, Backspace edits, Ctrl-C cancels). */
async function askHidden(question: string): Promise<string> {
  const input = process.stdin;
  // Raw mode first: what is typed as soon as the question shows must not be echoed.
  input.setRawMode(true);
  input.setEncoding('utf8');
  input.resume();
  process.stderr.write(question);
  return new Promise((resolve, reject) => {
    let value = '';
    const finish = (): void => {
      input.off('data', onData);
      input.setRawMode(false);
      input.pause();
      process.stderr.write('\n');
    };
    const onData = (chunk: string): void => {
      for (const char of chunk) {
        if (char === '\r' || char === '\n' || char === '\u0004') {
          finish();
          resolve(value);
          return;
        }
        if (char === '\u0003') {
          finish();
          reject(new UsageError('cancelled: no password given'));
          return;
        }
        value = char === '\u007f' || char === '\b' ? [...value].slice(0, -1).join('') : value + char;
      }
    };
    input.on('data', onData);
  });
}

/** The password for the encrypted key `file`: COSIGN_PASSWORD, else a prompt on a terminal, else undefined. */
export async function cosignPassword(file: string, env: NodeJS.ProcessEnv = process.env): Promise<string | undefined> {
  if (env.COSIGN_PASSWORD !== undefined) return env.COSIGN_PASSWORD;
  if (process.stdin.isTTY !== true || process.stderr.isTTY !== true) return undefined;
  return askHidden(`Enter password for private key ${file}: `);
}
