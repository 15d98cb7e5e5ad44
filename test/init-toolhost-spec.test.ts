/**
 * The `toolhost` dependency `toolhost init` writes (issue 29): never a relative `file:../node_modules/toolhost`,
 * which broke as soon as the project moved. Inside a project that installed toolhost from a packed tarball the new
 * project depends on that tarball by its absolute path; from a registry install, on `^version`; otherwise on the
 * installed copy by its absolute path. Driven on a fake install layout in a temp dir.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { defaultToolhostSpec } from '../host/authoring/scaffold.js';

describe('the toolhost spec init writes', () => {
  let holder: string;
  let installed: string;
  beforeEach(() => {
    holder = mkdtempSync(join(tmpdir(), 'toolhost-holder-'));
    installed = join(holder, 'node_modules', 'toolhost');
    mkdirSync(installed, { recursive: true });
  });
  afterEach(() => rmSync(holder, { recursive: true, force: true }));

  const manifest = (spec: string): void => writeFileSync(join(holder, 'package.json'), JSON.stringify({ name: 'holder', devDependencies: { toolhost: spec } }));

  it('follows a packed tarball the enclosing project installed, by its absolute path', () => {
    writeFileSync(join(holder, 'toolhost-0.1.0.tgz'), '');
    manifest('file:toolhost-0.1.0.tgz');
    const spec = defaultToolhostSpec(join(holder, 'tools', 'my-tool'), '0.1.0', installed);
    expect(spec).toBe(`file:${join(holder, 'toolhost-0.1.0.tgz')}`);
  });

  it('uses ^version when the enclosing project depends on a registry version', () => {
    manifest('^0.1.0');
    expect(defaultToolhostSpec(join(holder, 'my-tool'), '0.1.0', installed)).toBe('^0.1.0');
  });

  it('never writes a relative path into node_modules', () => {
    for (const spec of ['file:../elsewhere', 'git+https://example.com/toolhost.git']) {
      manifest(spec);
      const written = defaultToolhostSpec(join(holder, 'my-tool'), '0.1.0', installed);
      expect(written).toBe(`file:${installed}`);
      expect(isAbsolute(written.slice('file:'.length))).toBe(true);
    }
    rmSync(join(holder, 'package.json'));
    expect(defaultToolhostSpec(join(holder, 'a', 'b'), '0.1.0', installed)).not.toMatch(/^file:\.\.?\//);
  });

  it('uses ^version for a project outside the one that installed toolhost (npx, global)', () => {
    expect(defaultToolhostSpec(join(tmpdir(), 'elsewhere', 'my-tool'), '0.1.0', installed)).toBe('^0.1.0');
  });
});
