/**
 * Host-owned paths (issue 30, "Found" 2): a worktree a guest can write never
 * overlaps what the host reads code or configuration from. The attack, end to
 * end: an ELEVATED tool whose worktree holds the toolhost.yaml being served
 * rewrote it with an `mcp_servers` command (which the next `toolhost list`
 * ran). Then each kind of owned path, at config load and per call, through
 * symlinks both ways; read-only worktrees stay allowed.
 */
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openHost, type Host } from '../host/compose/host.js';
import { createRegistry } from '../host/compose/registry.js';
import { ConfigError, loadConfig } from '../host/config/index.js';
import { silentLogger } from '../host/index.js';
import { createAuditLog } from '../host/policy/audit.js';
import { HostOwnedPaths, overlapWith, processOwnedPaths, toolhostPackageRoot } from '../host/policy/host-owned-paths.js';
import { MemoryAuditLog } from '../host/policy/memory-audit-log.js';
import { fixture, hasCGuests, makeRegistry, root, sharedCacheDir } from './helpers.js';

const scratch = mkdtempSync(join(tmpdir(), 'toolhost-owned-'));
const ELEVATED = { policy: { privilege_level: 'ELEVATED' } };
const HOSTILE_YAML = 'mcp_servers:\n  - name: pwned\n    command: /bin/sh\n    args: ["-c", "touch /tmp/toolhost-pwned"]\n';

/** A fresh directory under the scratch directory. */
function dir(name: string): string {
  return mkdtempSync(join(scratch, `${name}-`));
}

/** A config file in a fresh directory, loading fs_attack (a guest that writes files) with an ELEVATED grant. */
function projectWithConfig(extra: string[] = []): { project: string; file: string; text: string } {
  const project = dir('project');
  const file = join(project, 'toolhost.yaml');
  const text = [
    'host:',
    '  pool:',
    `    cache_dir: ${sharedCacheDir}`,
    '    threads: 1',
    '    containment: thread',
    'tools:',
    `  - path: ${fixture('fs_attack')}`,
    '    grant:',
    '      privilege: elevated',
    ...extra,
    '',
  ].join('\n');
  writeFileSync(file, text);
  return { project, file, text };
}

async function configError(file: string): Promise<ConfigError> {
  const error = await loadConfig(file, { env: {} }).catch((thrown: unknown) => thrown);
  expect(error).toBeInstanceOf(ConfigError);
  return error as ConfigError;
}

describe.runIf(hasCGuests)('a guest cannot write the config file being served (end to end)', () => {
  let host: Host;
  let project: string;
  let file: string;
  let text: string;
  const audit = new MemoryAuditLog();

  beforeAll(async () => {
    ({ project, file, text } = projectWithConfig());
    ({ host } = await openHost({ configPath: file, overrides: { logger: silentLogger, audit } }));
  });
  afterAll(async () => {
    await host.close();
  });

  it('refuses an ELEVATED call whose worktree holds the toolhost.yaml being served, and the file is unchanged', async () => {
    const call = host.registry.execute('write', { path: '/worktree/toolhost.yaml', content: `${text}${HOSTILE_YAML}` }, { ...ELEVATED, workingDir: project, callId: 'rewrite-config' });
    await expect(call).rejects.toMatchObject({ code: 'PERMISSION_DENIED', callId: 'rewrite-config', details: { reason: 'host-owned-path', kind: 'config', owned: file, worktree: project } });
    expect(readFileSync(file, 'utf8')).toBe(text);
    expect((await loadConfig(file, { env: {} })).config.mcp_servers).toBeUndefined();
    // The denial is audited, naming both paths.
    const denied = audit.entries.find((entry) => entry.callId === 'rewrite-config');
    expect(denied).toMatchObject({ decision: 'denied', code: 'PERMISSION_DENIED' });
    expect(denied?.reason).toContain(file);
    expect(denied?.reason).toContain(project);
  });

  it('refuses it through a symlink to the project too', async () => {
    const link = join(dir('links'), 'project');
    symlinkSync(project, link);
    await expect(host.registry.execute('write', { path: '/worktree/toolhost.yaml', content: HOSTILE_YAML }, { ...ELEVATED, workingDir: link })).rejects.toMatchObject({ code: 'PERMISSION_DENIED', details: { kind: 'config' } });
    expect(readFileSync(file, 'utf8')).toBe(text);
  });

  it('still lets a DEFAULT (read-only) call read the config', async () => {
    const result = await host.registry.execute('read', { path: '/worktree/toolhost.yaml' }, { policy: { privilege_level: 'DEFAULT' }, workingDir: project });
    expect(result.structuredContent).toMatchObject({ ok: true, content: text });
  });

  it('lets an ELEVATED call write a worktree beside the config', async () => {
    const work = join(project, 'work');
    mkdirSync(work, { recursive: true });
    const result = await host.registry.execute('write', { path: '/worktree/out.txt', content: 'fine' }, { ...ELEVATED, workingDir: work });
    expect(result.structuredContent).toEqual({ ok: true });
    expect(readFileSync(join(work, 'out.txt'), 'utf8')).toBe('fine');
  });
});

describe('a config that grants a writable worktree over a host-owned path is refused at load', () => {
  it('the config file itself (grant.worktree ".")', async () => {
    const { file } = projectWithConfig(['      worktree: .']);
    const error = await configError(file);
    expect(error.message).toMatch(/toolhost\.yaml:\d+:\d+: .*worktree .* holds the config file \(.*toolhost\.yaml\)/);
    expect(error.message).toContain('tools[0]');
  });

  it('but not for a read-only grant', async () => {
    const { file } = projectWithConfig(['      worktree: .']);
    writeFileSync(file, readFileSync(file, 'utf8').replace('privilege: elevated', 'privilege: default'));
    await expect(loadConfig(file, { env: {} })).resolves.toBeDefined();
  });

  it('the config file reached through a symlink the worktree holds', async () => {
    const real = projectWithConfig();
    const work = dir('work');
    symlinkSync(real.project, join(work, 'conf'));
    const file = join(work, 'conf', 'toolhost.yaml');
    writeFileSync(file, real.text.replace('privilege: elevated', `privilege: elevated\n      worktree: ${work}`));
    const error = await configError(file);
    expect(error.message).toContain(`through ${join(work, 'conf')}`);
  });

  it('the audit log, at its line', async () => {
    const { project, file } = projectWithConfig(['      worktree: work']);
    mkdirSync(join(project, 'work'));
    writeFileSync(file, readFileSync(file, 'utf8').replace('host:\n', 'host:\n  audit_log: work/audit.log\n'));
    expect((await configError(file)).message).toMatch(/toolhost\.yaml:2:\d+: .*holds the audit log/);
  });

  it('a component, at its path', async () => {
    const { project, file } = projectWithConfig(['      worktree: work']);
    mkdirSync(join(project, 'work'));
    copyFileSync(fixture('fs_attack'), join(project, 'work', 'tool.wasm'));
    writeFileSync(file, `${readFileSync(file, 'utf8')}  - path: work/tool.wasm\n`);
    expect((await configError(file)).message).toMatch(/toolhost\.yaml:11:\d+: .*holds a component the host loads/);
  });

  it('the store of fetched components (distribution.store_dir), at its line', async () => {
    const { project, file } = projectWithConfig(['      worktree: work']);
    mkdirSync(join(project, 'work'));
    writeFileSync(file, `${readFileSync(file, 'utf8')}distribution:\n  store_dir: work/store\n`);
    expect((await configError(file)).message).toMatch(/toolhost\.yaml:\d+:\d+: .*holds the store of fetched components/);
  });

  it("an MCP server's command and the script its args name", async () => {
    const { project, file } = projectWithConfig(['      worktree: work']);
    mkdirSync(join(project, 'work'));
    writeFileSync(join(project, 'work', 'server.mjs'), '');
    const base = readFileSync(file, 'utf8');
    writeFileSync(file, `${base}mcp_servers:\n  - name: helper\n    command: ./work/server.mjs\n`);
    expect((await configError(file)).message).toMatch(/holds an imported MCP server the host runs/);
    writeFileSync(file, `${base}mcp_servers:\n  - name: helper\n    command: node\n    args: [work/server.mjs]\n`);
    expect((await configError(file)).message).toMatch(/mcp_servers\[0\]\.args\[0\] .*holds an imported MCP server/);
  });

  it("toolhost's own package (an app's directory that has toolhost in node_modules)", async () => {
    const { file } = projectWithConfig([`      worktree: ${dirname(toolhostPackageRoot())}`]);
    expect((await configError(file)).message).toMatch(/holds (toolhost's own package|a node_modules directory)/);
  });
});

describe.runIf(hasCGuests)('per call, each kind of host-owned path', () => {
  it('the audit log file', async () => {
    const work = dir('audit');
    const registry = createRegistry({ logger: silentLogger, audit: createAuditLog(join(work, 'audit.log')), sandbox: { cacheDir: sharedCacheDir, threads: 1 } });
    try {
      await registry.registerWasmTools(fixture('fs_attack'), { grant: { privilege: 'ELEVATED' } });
      await expect(registry.execute('write', { path: '/worktree/audit.log', content: '' }, { ...ELEVATED, workingDir: work })).rejects.toMatchObject({ code: 'PERMISSION_DENIED', details: { kind: 'audit-log' } });
    } finally {
      await registry.close();
    }
  });

  it('the store of fetched components (a guest would plant what the host runs next)', async () => {
    const work = dir('store');
    const registry = createRegistry({ logger: silentLogger, audit: new MemoryAuditLog(), distribution: { storeDir: join(work, 'store') }, sandbox: { cacheDir: sharedCacheDir, threads: 1 } });
    try {
      await registry.registerWasmTools(fixture('fs_attack'), { grant: { privilege: 'ELEVATED' } });
      await expect(registry.execute('write', { path: '/worktree/store/x', content: '' }, { ...ELEVATED, workingDir: work })).rejects.toMatchObject({ code: 'PERMISSION_DENIED', details: { kind: 'store' } });
    } finally {
      await registry.close();
    }
  });

  it('a component file the host loaded (the guest could rewrite its own code)', async () => {
    const work = dir('component');
    copyFileSync(fixture('fs_attack'), join(work, 'mine.wasm'));
    const registry = makeRegistry();
    try {
      await registry.registerWasmTools(join(work, 'mine.wasm'), { grant: { privilege: 'ELEVATED' } });
      await expect(registry.execute('write', { path: '/worktree/mine.wasm', content: '' }, { ...ELEVATED, workingDir: work })).rejects.toMatchObject({ code: 'PERMISSION_DENIED', details: { kind: 'component' } });
    } finally {
      await registry.close();
    }
  });

  describe('with one registry', () => {
    const registry = makeRegistry();
    beforeAll(async () => {
      await registry.registerWasmTools(fixture('fs_attack'), { grant: { privilege: 'ELEVATED' } });
    });
    afterAll(async () => {
      await registry.close();
    });
    // Each call only reads a file that does not exist: on code without the rule it changes nothing.
    const refused = (workingDir: string) => expect(registry.execute('read', { path: '/worktree/absent' }, { ...ELEVATED, workingDir })).rejects;

    it("the package's dist/ (the worker bootstrap)", async () => {
      await refused(join(root, 'dist')).toMatchObject({ code: 'PERMISSION_DENIED', details: { reason: 'host-owned-path', kind: 'package' } });
    });

    it('the directory that holds the package (an app with toolhost installed)', async () => {
      await refused(dirname(root)).toMatchObject({ code: 'PERMISSION_DENIED', details: { reason: 'host-owned-path' } });
    });

    it('a directory inside the transpile cache', async () => {
      await refused(join(sharedCacheDir, 'ids-v1')).toMatchObject({ code: 'PERMISSION_DENIED', details: { kind: expect.stringMatching(/^(package|node_modules|cache)$/) } });
    });

    it('a symlink to the package root', async () => {
      const link = join(dir('pkg-link'), 'toolhost');
      symlinkSync(root, link);
      await refused(link).toMatchObject({ code: 'PERMISSION_DENIED', details: { kind: 'package', worktree: link } });
    });

    it('still allows a worktree elsewhere', async () => {
      const result = await registry.execute('read', { path: '/worktree/absent' }, { ...ELEVATED, workingDir: dir('elsewhere') });
      expect(result.isError).toBe(false);
    });
  });
});

describe('the overlap rule, kind by kind', () => {
  it('knows the package, its node_modules and the Node binary', () => {
    const kinds = new Map(processOwnedPaths().map((owned) => [owned.path, owned.kind]));
    expect(kinds.get(root.replace(/\/$/, ''))).toBe('package');
    expect(kinds.get(join(root, 'node_modules'))).toBe('node_modules');
    expect(kinds.get(process.execPath)).toBe('runtime');
  });

  it('a node_modules directory: holding it, or lying inside it', () => {
    const app = dir('app');
    const modules = join(app, 'node_modules');
    mkdirSync(join(modules, 'toolhost', 'dist'), { recursive: true });
    const owned = [{ kind: 'node_modules' as const, path: modules }];
    expect(overlapWith(app, owned)).toMatchObject({ relation: 'holds' });
    expect(overlapWith(join(modules, 'toolhost', 'dist'), owned)).toMatchObject({ relation: 'inside' });
    expect(overlapWith(join(app, 'src'), owned)).toBeUndefined();
  });

  it('a lock file or store not created yet', () => {
    const work = dir('future');
    const paths = new HostOwnedPaths([{ kind: 'lock', path: join(work, 'locks', 'toolhost.lock') }], { process: false });
    expect(paths.overlap(work)).toMatchObject({ owned: { kind: 'lock' }, relation: 'holds' });
  });

  it('a worktree that lies inside an owned directory through a symlink', () => {
    const cache = dir('cache');
    mkdirSync(join(cache, 'entry'));
    const link = join(dir('elsewhere'), 'entry');
    symlinkSync(join(cache, 'entry'), link);
    expect(overlapWith(link, [{ kind: 'cache', path: cache }])).toMatchObject({ relation: 'inside', realWorktree: join(cache, 'entry') });
  });
});
