/**
 * No tool's worktree inside another tool's writable one (issue 36, M9): the
 * outer tool, with only the moves its confinement allows, could rename the
 * inner worktree (or a link on the way to it) and leave a symlink in its
 * place; the inner tool's root is resolved by path when a call starts, so its
 * next call ran with its root anywhere (/proc, or outside every worktree).
 * Refused at config load (pointing at the inner entry's worktree line), at
 * registration, in both orders, and at admission for a worktree bound to one
 * call; siblings, a shared worktree and read-only nesting stay allowed.
 */
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../host/config/index.js';
import { nestedWorktrees } from '../host/policy/worktree-nesting.js';
import { fixture, hasCGuests, makeRegistry, sharedCacheDir } from './helpers.js';

const scratch = mkdtempSync(join(tmpdir(), 'toolhost-nesting-'));

/** An outer directory with `inner/` inside it, and a sibling directory. */
function layout(): { outer: string; inner: string; sibling: string } {
  const base = mkdtempSync(join(scratch, 'layout-'));
  const outer = join(base, 'outer');
  const inner = join(outer, 'inner');
  const sibling = join(base, 'sibling');
  mkdirSync(inner, { recursive: true });
  mkdirSync(sibling);
  return { outer, inner, sibling };
}

/** A config of two tools entries, each with a grant (privilege, worktree). */
function config(first: [string, string], second: [string, string]): string {
  const file = join(mkdtempSync(join(scratch, 'config-')), 'toolhost.yaml');
  const entry = (path: string, [privilege, worktree]: [string, string]): string[] => [`  - path: ${path}`, '    grant:', `      privilege: ${privilege}`, `      worktree: ${worktree}`];
  writeFileSync(file, ['host:', '  pool:', `    cache_dir: ${sharedCacheDir}`, 'tools:', ...entry(fixture('fs_attack'), first), ...entry(fixture('counter'), second), ''].join('\n'));
  return file;
}

async function configError(file: string): Promise<ConfigError> {
  const error = await loadConfig(file, { env: {} }).catch((thrown: unknown) => thrown);
  expect(error).toBeInstanceOf(ConfigError);
  return error as ConfigError;
}

describe.runIf(hasCGuests)('a worktree inside another tool\'s writable worktree is refused at config load', () => {
  it('the writable outer entry first: the error points at the inner entry\'s worktree line and names both', async () => {
    const { outer, inner } = layout();
    const error = await configError(config(['elevated', outer], ['default', inner]));
    expect(error.message).toMatch(/toolhost\.yaml:12:\d+: .*worktree .*inner of tools\[1\] lies inside the writable worktree .*outer of tools\[0\]/);
    expect(error.message).toContain('could move tools[1]\'s root');
  });

  it('the inner entry first, and an inner one that is writable too', async () => {
    const { outer, inner } = layout();
    const error = await configError(config(['privileged', inner], ['ELEVATED', outer]));
    expect(error.message).toMatch(/toolhost\.yaml:8:\d+: .*inner of tools\[0\] lies inside the writable worktree .*outer of tools\[1\]/);
  });

  it('a worktree reached through a symlink the writable worktree holds', async () => {
    const { outer, sibling } = layout();
    symlinkSync(sibling, join(outer, 'link'));
    const error = await configError(config(['elevated', outer], ['default', join(outer, 'link')]));
    expect(error.message).toContain('lies inside the writable worktree');
  });

  it('allows siblings, one shared worktree, and read-only worktrees nested', async () => {
    const { outer, inner, sibling } = layout();
    await expect(loadConfig(config(['elevated', outer], ['elevated', sibling]), { env: {} })).resolves.toBeDefined();
    await expect(loadConfig(config(['elevated', outer], ['default', outer]), { env: {} })).resolves.toBeDefined();
    await expect(loadConfig(config(['default', outer], ['default', inner]), { env: {} })).resolves.toBeDefined();
    // The writable one inside a read-only one: the read-only tool cannot move anything.
    await expect(loadConfig(config(['default', outer], ['elevated', inner]), { env: {} })).resolves.toBeDefined();
  });
});

describe.runIf(hasCGuests)('a registry refuses tools whose worktree nests in another tool\'s writable one', () => {
  it('in both orders of registration, naming both worktrees', async () => {
    const { outer, inner, sibling } = layout();
    for (const [first, second] of [[{ privilege: 'ELEVATED', worktree: outer }, { privilege: 'DEFAULT', worktree: inner }], [{ privilege: 'DEFAULT', worktree: inner }, { privilege: 'ELEVATED', worktree: outer }]] as const) {
      const registry = makeRegistry();
      try {
        await registry.registerWasmTools(fixture('fs_attack'), { grant: first });
        await expect(registry.registerWasmTools(fixture('counter'), { grant: second })).rejects.toMatchObject({ code: 'PERMISSION_DENIED', details: { reason: 'nested-worktree', outer, inner } });
        expect(registry.names().some((name) => name.startsWith('counter'))).toBe(false);
        // Control: a sibling worktree registers.
        await registry.registerWasmTools(fixture('counter'), { grant: { privilege: 'ELEVATED', worktree: sibling } });
      } finally {
        await registry.close();
      }
    }
  });

  it('refuses a call whose own worktree lies inside another tool\'s writable one, or (writable) holds one, and allows a sibling', async () => {
    const { outer, inner, sibling } = layout();
    const registry = makeRegistry();
    try {
      await registry.registerWasmTools(fixture('fs_attack'), { grant: { privilege: 'ELEVATED', worktree: outer } });
      await registry.registerWasmTools(fixture('counter'), { grant: { privilege: 'ELEVATED' } });
      const readOnly = { policy: { privilege_level: 'DEFAULT' } };
      await expect(registry.execute('counter', {}, { ...readOnly, workingDir: inner })).rejects.toMatchObject({ code: 'PERMISSION_DENIED', details: { reason: 'nested-worktree', outer, inner } });
      const parent = join(outer, '..');
      await expect(registry.execute('counter', {}, { policy: { privilege_level: 'ELEVATED' }, workingDir: parent })).rejects.toMatchObject({ code: 'PERMISSION_DENIED', details: { reason: 'nested-worktree', inner: outer } });
      // Controls: a sibling, read-only or writable; the writable tool's own worktree bound to it.
      expect((await registry.execute('counter', {}, { ...readOnly, workingDir: sibling })).structuredContent).toEqual({ count: 1 });
      expect((await registry.execute('counter', {}, { policy: { privilege_level: 'ELEVATED' }, workingDir: sibling })).structuredContent).toEqual({ count: 1 });
    } finally {
      await registry.close();
    }
  });

  it('compares worktrees pairwise without a registry (the rule itself)', () => {
    const { outer, inner, sibling } = layout();
    expect(nestedWorktrees([{ name: 'a', worktree: outer, privilege: 'elevated' }, { name: 'b', worktree: inner }])).toHaveLength(1);
    expect(nestedWorktrees([{ name: 'a', worktree: outer }, { name: 'b', worktree: inner }])).toEqual([]);
    expect(nestedWorktrees([{ name: 'a', worktree: outer, privilege: 'ELEVATED' }, { name: 'b', worktree: sibling, privilege: 'ELEVATED' }])).toEqual([]);
  });
});
