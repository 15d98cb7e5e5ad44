/**
 * The tool's grant ∩ the call's request: labels, escalation, approval, the
 * worktree requirement, the environment, and the audit log.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ToolRegistry, defineNativeTool, silentLogger, type ToolGrant } from '../host/index.js';
import { MemoryAuditLog } from '../host/policy/memory-audit-log.js';
import type { ApprovalHook } from '../host/policy/approval.js';

/** A native tool that reports the capabilities it was given. */
function probe(grant: ToolGrant, defaultPolicy?: Record<string, unknown>) {
  return defineNativeTool({
    name: 'probe',
    description: 'Reports its capabilities.',
    inputSchema: {},
    grant,
    ...(defaultPolicy === undefined ? {} : { defaultPolicy }),
    run: (_args, ctx) => ({ ...ctx.capabilities, env: ctx.env }),
  });
}

let registry: ToolRegistry;
let audit: MemoryAuditLog;
afterEach(async () => {
  await registry.close();
});

function setup(grant: ToolGrant, options: { approve?: ApprovalHook; defaultPolicy?: Record<string, unknown>; hostEnv?: NodeJS.ProcessEnv } = {}): ToolRegistry {
  audit = new MemoryAuditLog();
  registry = new ToolRegistry({
    logger: silentLogger,
    audit,
    hostEnv: options.hostEnv ?? { HOME: '/home/host', SECRET: 'host-secret', API_TOKEN: 'from-host' },
    ...(options.approve ? { approve: options.approve } : {}),
  });
  registry.register(probe(grant, options.defaultPolicy));
  return registry;
}

describe('policy resolution', () => {
  it('gives DENY_ALL and MINIMAL by default: no network, no filesystem, no environment', async () => {
    setup({ network: 'FULL_ACCESS', privilege: 'PRIVILEGED', envAllow: ['HOME'] });
    const result = await registry.execute('probe', {}, { workingDir: '/tmp' });
    expect(result.structuredContent).toEqual({ network: 'DENY_ALL', egressAllow: [], privilege: 'MINIMAL', env: {} });
    expect(audit.entries).toEqual([]);
  });

  it('reads labels case-insensitively and refuses unknown ones as INVALID_INPUT', async () => {
    setup({ network: 'EGRESS_RESTRICTED', egressAllow: ['api.example.com'] });
    const result = await registry.execute('probe', {}, { policy: { network_policy: 'egress_Restricted' } });
    expect(result.structuredContent).toMatchObject({ network: 'EGRESS_RESTRICTED', egressAllow: ['api.example.com'] });
    await expect(registry.execute('probe', {}, { policy: { network_policy: 'LAN_ONLY' } })).rejects.toMatchObject({ code: 'INVALID_INPUT' });
  });

  it('refuses a network label above the grant with PERMISSION_DENIED, and audits it', async () => {
    setup({ network: 'EGRESS_RESTRICTED' });
    await expect(registry.execute('probe', {}, { callId: 'net-1', policy: { network_policy: 'EGRESS_UNRESTRICTED' } })).rejects.toMatchObject({ code: 'PERMISSION_DENIED' });
    expect(audit.entries).toEqual([expect.objectContaining({ callId: 'net-1', tool: 'probe', decision: 'denied', code: 'PERMISSION_DENIED', network: 'EGRESS_UNRESTRICTED', level: 'warn' })]);
  });

  it('refuses a privilege above the grant with TOOL_PRIVILEGE_ESCALATION, and audits it', async () => {
    setup({ privilege: 'DEFAULT' });
    await expect(registry.execute('probe', {}, { callId: 'priv-1', policy: { privilege_level: 'elevated' } })).rejects.toMatchObject({ code: 'TOOL_PRIVILEGE_ESCALATION' });
    expect(audit.entries).toEqual([expect.objectContaining({ callId: 'priv-1', decision: 'denied', code: 'TOOL_PRIVILEGE_ESCALATION', privilege: 'ELEVATED' })]);
  });

  it('answers WORKTREE_NOT_BOUND when the policy requires a worktree and none is bound', async () => {
    setup({ privilege: 'DEFAULT' });
    await expect(registry.execute('probe', {}, { policy: { worktree_required: true } })).rejects.toMatchObject({ code: 'WORKTREE_NOT_BOUND' });
    const bound = await registry.execute('probe', {}, { workingDir: '/srv/repo', policy: { worktree_required: true, privilege_level: 'DEFAULT' } });
    expect(bound.structuredContent).toMatchObject({ filesystem: { root: '/srv/repo', readOnly: true } });
  });

  it('maps privilege to the filesystem: none at MINIMAL, read-only at DEFAULT, read-write at ELEVATED', async () => {
    setup({ privilege: 'ELEVATED' });
    const at = async (privilege_level: string): Promise<unknown> =>
      ((await registry.execute('probe', {}, { workingDir: '/srv/repo', policy: { privilege_level } })).structuredContent as { filesystem?: unknown }).filesystem;
    expect(await at('MINIMAL')).toBeUndefined();
    expect(await at('DEFAULT')).toEqual({ root: '/srv/repo', readOnly: true });
    expect(await at('ELEVATED')).toEqual({ root: '/srv/repo', readOnly: false });
  });

  it('gives ELEVATED calls only allowlisted env keys: configured values first, then the caller\'s, then the host\'s', async () => {
    setup({ privilege: 'ELEVATED', envAllow: ['HOME', 'API_TOKEN', 'REGION', 'MISSING'], env: { REGION: 'eu-1' } });
    const minimal = await registry.execute('probe', {}, { env: { API_TOKEN: 'from-caller' } });
    expect((minimal.structuredContent as { env: unknown }).env).toEqual({});
    const elevated = await registry.execute('probe', {}, { callId: 'env-1', env: { API_TOKEN: 'from-caller', SECRET: 'x' }, policy: { privilege_level: 'ELEVATED' } });
    expect((elevated.structuredContent as { env: unknown }).env).toEqual({ HOME: '/home/host', API_TOKEN: 'from-caller', REGION: 'eu-1' });
    expect(audit.entries).toEqual([expect.objectContaining({ callId: 'env-1', decision: 'allowed', privilege: 'ELEVATED', level: 'info', grants: expect.objectContaining({ envKeys: ['HOME', 'API_TOKEN', 'REGION'] }) })]);
  });

  it('runs PRIVILEGED and FULL_ACCESS calls only when the approval hook approves, audited at warn', async () => {
    const asked: unknown[] = [];
    setup({ privilege: 'PRIVILEGED', network: 'FULL_ACCESS' }, {
      approve: (request) => {
        asked.push(request);
        return request.callId !== 'refuse-me';
      },
    });
    const approved = await registry.execute('probe', {}, { callId: 'ok-1', policy: { privilege_level: 'PRIVILEGED', network_policy: 'FULL_ACCESS' } });
    expect(approved.structuredContent).toMatchObject({ privilege: 'PRIVILEGED', network: 'FULL_ACCESS' });
    await expect(registry.execute('probe', {}, { callId: 'refuse-me', policy: { network_policy: 'FULL_ACCESS' } })).rejects.toMatchObject({ code: 'PERMISSION_DENIED' });
    expect(asked).toEqual([
      expect.objectContaining({ callId: 'ok-1', reasons: ['privilege_level PRIVILEGED', 'network_policy FULL_ACCESS'] }),
      expect.objectContaining({ callId: 'refuse-me', reasons: ['network_policy FULL_ACCESS'] }),
    ]);
    expect(audit.entries).toEqual([
      expect.objectContaining({ callId: 'ok-1', decision: 'allowed', privilege: 'PRIVILEGED', level: 'warn' }),
      expect.objectContaining({ callId: 'refuse-me', decision: 'denied', code: 'PERMISSION_DENIED', level: 'warn' }),
    ]);
  });

  it('refuses PRIVILEGED without an approval hook (the default), emitting only a rejected error', async () => {
    setup({ privilege: 'PRIVILEGED' });
    const events = [];
    for await (const event of registry.stream('probe', {}, { policy: { privilege_level: 'PRIVILEGED' } })) events.push(event);
    expect(events).toEqual([expect.objectContaining({ type: 'error', code: 'PERMISSION_DENIED', stage: 'rejected' })]);
  });

  it('applies the tool\'s default policy where the call is silent, still within the grant', async () => {
    setup({ network: 'EGRESS_RESTRICTED', privilege: 'DEFAULT' }, { defaultPolicy: { network_policy: 'EGRESS_RESTRICTED', privilege_level: 'DEFAULT' } });
    const silent = await registry.execute('probe', {});
    expect(silent.structuredContent).toMatchObject({ network: 'EGRESS_RESTRICTED', privilege: 'DEFAULT' });
    const narrowed = await registry.execute('probe', {}, { policy: { network_policy: 'DENY_ALL' } });
    expect(narrowed.structuredContent).toMatchObject({ network: 'DENY_ALL', privilege: 'DEFAULT' });
  });
});
