/**
 * `CLANG` is an override, as documented: when set, it is the clang used, and a CLANG that does not run is reported
 * by name, never replaced by another clang found on PATH (issue 41: a wrong CLANG was silently ignored).
 */
import { spawnSync } from 'node:child_process';
import { afterEach, describe, expect, it, vi } from 'vitest';

const hasClang = spawnSync('clang', ['--version'], { stdio: 'ignore' }).status === 0;

describe('the CLANG override', () => {
  afterEach(() => {
    vi.unstubAllEnvs();
    vi.resetModules();
  });

  it('reports a CLANG that does not run instead of falling back to clang on PATH', async () => {
    vi.stubEnv('CLANG', '/nonexistent/bin/clang');
    const { probeCToolchain } = await import('../host/authoring/toolchain.js');
    const probe = probeCToolchain();
    expect(probe.found).toBeUndefined();
    expect(probe.problems.join('; ')).toContain('CLANG=/nonexistent/bin/clang does not run');
  });

  it.runIf(hasClang)('uses clang from PATH when CLANG is unset (control)', async () => {
    vi.stubEnv('CLANG', '');
    const { probeCToolchain } = await import('../host/authoring/toolchain.js');
    expect(probeCToolchain().found?.clang).toMatch(/^clang/);
  });
});
