import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { ToolRegistry } from '../host/index.js';
import { EMPTY_SCOPE, createWasiImports } from '../host/sandbox/wasi/capabilities.js';
import { collect, fixture, hasCGuests, makeRegistry, terminalCount } from './helpers.js';

describe.runIf(hasCGuests)('what a WASI guest gets by default', () => {
  let registry: ToolRegistry;

  beforeAll(async () => {
    registry = makeRegistry();
    await registry.registerWasmTools(fixture('wasi_probe'));
  });
  afterAll(async () => {
    await registry.close();
  });

  it('sees an empty environment, never the host\'s', async () => {
    expect(process.env.PATH).toBeTruthy();
    const result = await registry.execute('env', {});
    expect(result.structuredContent).toEqual({ count: 0, home: null, path: null });
  });

  it('has no preopened directories, so no host file can be opened or created', async () => {
    const result = await registry.execute('files', {});
    const outcomes = result.structuredContent as Record<string, string>;
    expect(Object.keys(outcomes)).toEqual(['absolute', 'relative', 'dotdot', 'proc', 'cwd', 'root_dir', 'create']);
    for (const outcome of Object.values(outcomes)) expect(outcome).not.toBe('opened');
  });

  it('has its stdout and stderr captured as log events, never written to the host\'s stdio', async () => {
    const stdout = vi.spyOn(process.stdout, 'write');
    const stderr = vi.spyOn(process.stderr, 'write');
    try {
      const events = await collect(registry.stream('print', { lines: 3 }));
      const logs = events.filter((event) => event.type === 'log');
      expect(logs.filter((log) => log.source === 'stdout').map((log) => log.message)).toEqual(['probe stdout line 0', 'probe stdout line 1', 'probe stdout line 2']);
      expect(logs.filter((log) => log.source === 'stderr').map((log) => log.message)).toEqual(['probe stderr line 0', 'probe stderr line 1', 'probe stderr line 2']);
      const written = [...stdout.mock.calls, ...stderr.mock.calls].map((call) => String(call[0])).join('');
      expect(written).not.toContain('probe std');
    } finally {
      stdout.mockRestore();
      stderr.mockRestore();
    }
  });

  it('ends only its own call with TOOL_CRASHED when it calls exit, and the next call runs', async () => {
    const events = await collect(registry.stream('exit', { code: 3 }));
    expect(terminalCount(events)).toBe(1);
    expect(events.at(-1)).toMatchObject({ type: 'error', code: 'TOOL_CRASHED', details: { reason: 'exit', status: 'failure' } });
    expect((await registry.execute('env', {})).isError).toBe(false);
  });

  it('sleeps through a WASI clock poll without being charged CPU for the wait', async () => {
    const result = await registry.execute('sleep', { ms: 300 });
    expect(result.structuredContent).toEqual({ slept: true });
    expect(result.accounting?.wallMs).toBeGreaterThanOrEqual(300);
    expect(result.accounting?.cpuMs).toBeLessThan(150);
  });
});

describe('the capability layer\'s network defaults', () => {
  const { imports } = createWasiImports(EMPTY_SCOPE);

  it('refuses outgoing HTTP outside a call with the valid wasi:http error code HTTP-request-denied', () => {
    const types = imports['wasi:http/types'] as {
      Fields: new () => unknown;
      OutgoingRequest: new (fields: unknown) => { setAuthority(a: string): void; setScheme(s: unknown): void };
    };
    const handler = imports['wasi:http/outgoing-handler'] as { handle(request: unknown, options: unknown): { get(): unknown } };
    const request = new types.OutgoingRequest(new types.Fields());
    request.setScheme({ tag: 'HTTP' });
    request.setAuthority('127.0.0.1:9');
    const future = handler.handle(request, undefined);
    expect(future.get()).toEqual({ tag: 'ok', val: { tag: 'err', val: { tag: 'HTTP-request-denied' } } });
  });

  it('refuses sockets and name lookups with the wasi:sockets error code access-denied', () => {
    const tcp = imports['wasi:sockets/tcp-create-socket'] as { createTcpSocket(family: string): unknown };
    const udp = imports['wasi:sockets/udp-create-socket'] as { createUdpSocket(family: string): unknown };
    const lookup = imports['wasi:sockets/ip-name-lookup'] as { resolveAddresses(network: unknown, name: string): unknown };
    expect(() => tcp.createTcpSocket('ipv4')).toThrow();
    for (const attempt of [() => tcp.createTcpSocket('ipv4'), () => udp.createUdpSocket('ipv6'), () => lookup.resolveAddresses({}, 'example.com')]) {
      try {
        attempt();
      } catch (error) {
        expect(error).toBe('access-denied');
      }
    }
  });

  it('gives no environment, no arguments and no preopens', () => {
    const environment = imports['wasi:cli/environment'] as { getEnvironment(): unknown[]; getArguments(): unknown[] };
    const preopens = imports['wasi:filesystem/preopens'] as { getDirectories(): unknown[] };
    expect(environment.getEnvironment()).toEqual([]);
    expect(environment.getArguments()).toEqual([]);
    expect(preopens.getDirectories()).toEqual([]);
  });
});
