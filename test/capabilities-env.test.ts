import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolRegistry } from '../host/index.js';
import { fixture, hasCGuests, makeRegistry } from './helpers.js';

describe.runIf(hasCGuests)('the guest environment', () => {
  let registry: ToolRegistry;

  beforeAll(async () => {
    registry = makeRegistry({ hostEnv: { HOME: '/home/host', PATH: '/usr/bin', AWS_SECRET_ACCESS_KEY: 'never' } });
    await registry.registerWasmTools(fixture('wasi_probe'), { grant: { privilege: 'PRIVILEGED', envAllow: ['HOME'] } });
  });
  afterAll(async () => {
    await registry.close();
  });

  it('is empty at MINIMAL and DEFAULT, whatever the host has', async () => {
    for (const privilege_level of ['MINIMAL', 'DEFAULT']) {
      const result = await registry.execute('env', {}, { policy: { privilege_level } });
      expect(result.structuredContent, privilege_level).toEqual({ count: 0, home: null, path: null });
    }
  });

  it('holds only allowlisted keys at ELEVATED, never the whole environment', async () => {
    const result = await registry.execute('env', {}, { policy: { privilege_level: 'ELEVATED' }, env: { PATH: '/caller/bin' } });
    expect(result.structuredContent).toEqual({ count: 1, home: '/home/host', path: null });
  });

  it('is refused at PRIVILEGED without an approval', async () => {
    await expect(registry.execute('env', {}, { policy: { privilege_level: 'PRIVILEGED' } })).rejects.toMatchObject({ code: 'PERMISSION_DENIED' });
  });
});
