/**
 * Issue 30's fleet-principal attacks as they were made: one real
 * redis-server and two real `toolhost serve --redis` processes with the same
 * named tokens (gRPC on ephemeral loopback ports). Mallory's gRPC Cancel on
 * host B must not end Alice's call running on host A, nor tell whether it
 * exists; Bob may use the id Alice's running call has. Every process is
 * stopped by pid at the end.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../host/index.js';
import { RedisLink } from '../../host/fleet/index.js';
import { cliEnv, cliPath } from '../cli-runner.js';
import { fixture, hasCGuests, root } from '../helpers.js';
import { hasRedis, RedisServer, until } from '../redis-server.js';

interface ToolFrame { final: boolean; summary: Buffer }
interface ToolServiceClient extends grpc.Client {
  CallStream(request: object, metadata: grpc.Metadata): grpc.ClientReadableStream<ToolFrame>;
  Cancel(request: object, metadata: grpc.Metadata, callback: (error: grpc.ServiceError | null, value?: { error_code: string }) => void): void;
}
const definition = loadSync(join(root, 'proto', 'sw4rm', 'tool.proto'), { keepCase: true, longs: Number, defaults: true });
const ToolService = (grpc.loadPackageDefinition(definition) as unknown as { sw4rm: { tool: { ToolService: grpc.ServiceClientConstructor } } }).sw4rm.tool.ToolService;
const TOKENS = { alice: 'alice-token-30', bob: 'bob-token-30', mallory: 'mallory-token-30' } as const;
type Who = keyof typeof TOKENS;
const as = (who: Who): grpc.Metadata => {
  const metadata = new grpc.Metadata();
  metadata.set('authorization', `Bearer ${TOKENS[who]}`);
  return metadata;
};

class ServeProcess {
  readonly child: ChildProcess;
  output = '';
  #client: ToolServiceClient | undefined;

  constructor(config: string, redisUrl: string) {
    const env = { ...cliEnv(), ALICE_TOKEN: TOKENS.alice, BOB_TOKEN: TOKENS.bob, MALLORY_TOKEN: TOKENS.mallory };
    this.child = spawn(process.execPath, [cliPath, 'serve', '--config', config, '--redis', redisUrl, '--mcp', 'http', '--port', '0', '--grpc-port', '0'], {
      cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child.stdout?.on('data', (chunk: Buffer) => (this.output += chunk.toString()));
    this.child.stderr?.on('data', (chunk: Buffer) => (this.output += chunk.toString()));
  }

  async started(): Promise<void> {
    await until(() => /gRPC \(sw4rm\.tool\.ToolService\): \S+/.test(this.output) || this.child.exitCode !== null, 60_000, 'toolhost serve to start');
    if (this.child.exitCode !== null) throw new Error(`toolhost serve exited: ${this.output}`);
    const address = /gRPC \(sw4rm\.tool\.ToolService\): (\S+)/.exec(this.output)![1]!;
    this.#client = new ToolService(address, grpc.credentials.createInsecure()) as unknown as ToolServiceClient;
  }

  /** A streamed call of `tool` as `who`; resolves with its final frame's summary. */
  call(tool: string, callId: string, who: Who): Promise<Record<string, unknown>> {
    return new Promise((resolve, reject) => {
      const call = this.#client!.CallStream({ call_id: callId, tool_name: tool, args: Buffer.from('{}'), stream: true }, as(who));
      let last: ToolFrame | undefined;
      call.on('data', (frame: ToolFrame) => (last = frame));
      call.on('error', reject);
      call.on('end', () => resolve(last?.final ? (JSON.parse(last.summary.toString()) as Record<string, unknown>) : {}));
    });
  }

  cancel(callId: string, who: Who): Promise<string> {
    return new Promise((resolve, reject) => this.#client!.Cancel({ call_id: callId }, as(who), (error, answer) => (error ? reject(error) : resolve(answer!.error_code))));
  }

  async stop(): Promise<void> {
    this.#client?.close();
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.kill('SIGKILL');
    await exited;
  }
}

describe.runIf(hasRedis && hasCGuests)('two toolhost serve processes with named tokens on one Redis', () => {
  const redis = new RedisServer();
  let a: ServeProcess;
  let b: ServeProcess;
  let link: RedisLink;
  /** Whether a call of this id is registered fleet-wide, under whatever key. */
  const registered = async (callId: string): Promise<boolean> => (await link.command<string[]>(['KEYS', `toolhost:call:*${callId}`])).length > 0;

  beforeAll(async () => {
    await redis.start();
    const dir = mkdtempSync(join(tmpdir(), 'toolhost-fleet-principals-'));
    const config = join(dir, 'toolhost.yaml');
    writeFileSync(config, [
      'tools:',
      `  - path: ${fixture('counter')}`,
      'servers:',
      '  auth:',
      '    tokens:',
      '      - { principal: alice, token_env: ALICE_TOKEN }',
      '      - { principal: bob, token_env: BOB_TOKEN }',
      '      - { principal: mallory, token_env: MALLORY_TOKEN }',
      'cluster:',
      '  redis: redis://127.0.0.1:1',
      '  lease_ms: 900',
      '',
    ].join('\n'));
    a = new ServeProcess(config, redis.url);
    b = new ServeProcess(config, redis.url);
    link = new RedisLink({ url: redis.url }, silentLogger);
    link.start();
    await Promise.all([a.started(), b.started(), link.ready()]);
  });
  afterAll(async () => {
    await Promise.allSettled([a?.stop(), b?.stop()]);
    await link?.close();
    await redis.stop();
  });

  it('Mallory\'s gRPC Cancel on B neither ends Alice\'s call on A nor tells that it exists; Bob may use its id', async () => {
    const alices = a.call('spin', 'shared-30', 'alice');
    await until(() => registered('shared-30'), 5000, 'Alice\'s call to be registered');
    expect(await b.cancel('shared-30', 'mallory')).toBe('NOT_FOUND');
    // Bob's call of the same id, on B and on A, runs to its end while Alice's still runs.
    expect(await b.call('counter', 'shared-30', 'bob')).toMatchObject({ status: 'ok' });
    expect(await a.call('counter', 'shared-30', 'bob')).toMatchObject({ status: 'ok' });
    expect(await b.cancel('shared-30', 'alice')).toBe('CANCELLED');
    expect(await alices).toMatchObject({ status: 'cancelled' });
    await until(async () => (await b.cancel('shared-30', 'alice')) === 'ALREADY_COMPLETED', 3000, 'Alice to see her call done');
    expect(await b.cancel('shared-30', 'mallory')).toBe('NOT_FOUND');
  });
});
