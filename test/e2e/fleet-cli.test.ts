/**
 * `toolhost fleet` (in a process of its own) on a real redis-server holding a good host record and a malformed one:
 * the good one is shown (a tool name's escape sequence escaped), the bad one skipped with a warning on stderr, and
 * the exit code is 0. (readFleet on malformed records, beside a real fleet: test/fleet-principals.test.ts.)
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../host/index.js';
import { RedisLink } from '../../host/fleet/redis-link.js';
import { runCli } from '../cli-runner.js';
import { hasRedis, RedisServer } from '../redis-server.js';

describe.runIf(hasRedis)('toolhost fleet', () => {
  const redis = new RedisServer();
  let link: RedisLink;

  beforeAll(async () => {
    await redis.start();
    link = new RedisLink({ url: redis.url }, silentLogger);
    link.start();
    await link.ready();
  });
  afterAll(async () => {
    await link?.close();
    await redis.stop();
  });

  it('`toolhost fleet` shows the good records beside a malformed one, warning on stderr, and exits 0', async () => {
    // The CLI reads the default prefix: one good record (a call with an escape sequence in its tool name) and one bad.
    const far = String(Date.now() + 60_000);
    const good = { hostId: 'good-host', pid: 7, hostname: 'h', startedAt: 'then', heartbeatAt: 'now', inFlight: 1, calls: [{ callId: 'c-1', tool: 'evil\u001b[2Jtool', tenant: 'alice', startedAt: 'then' }] };
    await link.transaction([
      ['SET', 'toolhost:host:good-host', JSON.stringify(good), 'PX', '60000'],
      ['ZADD', 'toolhost:hosts', far, 'good-host'],
      ['SET', 'toolhost:host:bad-host', JSON.stringify({ hostId: 'bad-host', pid: 'seven' }), 'PX', '60000'],
      ['ZADD', 'toolhost:hosts', far, 'bad-host'],
    ]);
    try {
      const json = await runCli(['fleet', '--redis', redis.url, '--json'], 30_000);
      expect(json.code).toBe(0);
      expect((JSON.parse(json.stdout) as { hosts: Array<{ hostId: string }> }).hosts.map((host) => host.hostId)).toEqual(['good-host']);
      expect(json.stderr).toContain('skipped the record of host "bad-host"');
      const text = await runCli(['fleet', '--redis', redis.url], 30_000);
      expect(text.code).toBe(0);
      expect(text.stdout).toContain('1 host, 1 call running');
      expect(text.stdout).toContain('c-1  evil\\u001b[2Jtool  tenant alice');
      expect(text.stdout).not.toContain('\u001b');
      expect(text.stderr).toContain('bad-host');
    } finally {
      await link.transaction([['DEL', 'toolhost:host:good-host', 'toolhost:host:bad-host'], ['ZREM', 'toolhost:hosts', 'good-host', 'bad-host']]);
    }
  });
});
