import { describe, expect, it } from 'vitest';
import { ControlSlots } from '../host/sandbox/transport/control-slots.js';
import { DEFAULT_GUEST_OUTPUT_LIMITS } from '../host/sandbox/protocol.js';
import { TaskProfiles, type CallInput } from '../host/sandbox/transport/task-profiles.js';

const input = (over: Partial<CallInput> = {}): CallInput => ({
  kind: 'call',
  componentId: 'c1',
  memoryMb: 64,
  moduleUrl: 'file:///cache/c1/component.js',
  tool: 'echo',
  isolation: 'call',
  limits: DEFAULT_GUEST_OUTPUT_LIMITS,
  capabilities: { env: [], network: 'DENY_ALL' },
  args: '{}',
  context: { callId: 'a' },
  ...over,
});

describe('call profiles', () => {
  it('sends a profile along until every live worker has answered a task that carried it', () => {
    const profiles = new TaskProfiles();
    const entry = profiles.entry(input());
    const task = { taskId: 1, control: new ControlSlots().acquire().ref, submittedAt: 0 };
    expect(profiles.wire(input(), entry, task, [1, 2]).fixed).toEqual(entry.profile);
    entry.knownBy.add(1);
    expect(profiles.wire(input(), entry, task, [1, 2]).fixed).toBeDefined();
    entry.knownBy.add(2);
    const wire = profiles.wire(input({ args: '{"x":1}', context: { callId: 'b' } }), entry, task, [1, 2]);
    expect(wire).toMatchObject({ profile: entry.id, args: '{"x":1}', context: { callId: 'b' } });
    expect(wire.fixed).toBeUndefined();
    // A new worker (a replacement) has not seen it.
    expect(profiles.wire(input(), entry, task, [1, 3]).fixed).toBeDefined();
  });

  it('finds the entry of a call by its fields, whether its limits are the same object or an equal one', () => {
    const profiles = new TaskProfiles();
    const first = profiles.entry(input());
    expect(profiles.entry(input())).toBe(first);
    // An equal limits object (a call that came through a sandbox process, say) finds the same entry by key.
    expect(profiles.entry(input({ limits: { ...DEFAULT_GUEST_OUTPUT_LIMITS } }))).toBe(first);
    // Anything else that differs is another profile, with the same limits object or not.
    const others = [
      profiles.entry(input({ memoryMb: 128 })),
      profiles.entry(input({ tool: 'sha256' })),
      profiles.entry(input({ isolation: 'worker' })),
      profiles.entry(input({ componentId: 'c2' })),
      profiles.entry(input({ moduleUrl: 'file:///cache/c2/component.js' })),
      profiles.entry(input({ capabilities: { env: [], network: 'FULL_ACCESS' } })),
      profiles.entry(input({ limits: { ...DEFAULT_GUEST_OUTPUT_LIMITS, maxEvents: 1 } })),
    ];
    expect(new Set([first, ...others].map((entry) => entry.id)).size).toBe(8);
    // Past the entries remembered per limits object, the rest are still found (by key), and still the same.
    const many = Array.from({ length: 20 }, (_, i) => profiles.entry(input({ memoryMb: 200 + i })));
    expect(Array.from({ length: 20 }, (_, i) => profiles.entry(input({ memoryMb: 200 + i })))).toEqual(many);
    expect(profiles.entry(input({ memoryMb: 128 }))).toBe(others[0]);
  });

  it('forgets a worker that is gone, in every profile', () => {
    const profiles = new TaskProfiles();
    const one = profiles.entry(input());
    const two = profiles.entry(input({ tool: 'sha256' }));
    for (const entry of [one, two]) entry.knownBy.add(1).add(2);
    profiles.forget(1);
    expect([...one.knownBy]).toEqual([2]);
    expect([...two.knownBy]).toEqual([2]);
  });

  it('gives calls that differ in anything a worker keeps different profiles, and carries per-call capabilities on each task', () => {
    const profiles = new TaskProfiles();
    const base = profiles.entry(input());
    expect(profiles.entry(input({ args: '{"other":true}' })).id).toBe(base.id);
    for (const other of [
      input({ tool: 'sha256' }),
      input({ memoryMb: 128 }),
      input({ isolation: 'worker' }),
      input({ componentId: 'c2' }),
      input({ capabilities: { env: [], network: 'FULL_ACCESS' } }),
      input({ limits: { ...DEFAULT_GUEST_OUTPUT_LIMITS, maxEvents: 5 } }),
    ]) {
      expect(profiles.entry(other).id).not.toBe(base.id);
    }
    const task = { taskId: 1, control: new ControlSlots().acquire().ref, submittedAt: 0 };
    const wire = profiles.wire(input({ capabilities: { env: [['A', '1']], filesystem: { root: '/w', readOnly: true }, network: 'DENY_ALL' } }), base, task, []);
    expect(wire).toMatchObject({ env: [['A', '1']], filesystem: { root: '/w', readOnly: true } });
  });

  it('hands out zeroed control slots, and reuses only the slots given back', () => {
    const slots = new ControlSlots();
    const first = slots.acquire();
    first.flags[0] = 7;
    first.times[3] = 1.5;
    slots.release(first);
    const again = slots.acquire();
    expect(again).toBe(first);
    expect([...again.flags]).toEqual(new Array(again.flags.length).fill(0));
    expect([...again.times]).toEqual(new Array(again.times.length).fill(0));
    const other = slots.acquire();
    expect(other.ref.buffer === again.ref.buffer && other.ref.offset === again.ref.offset).toBe(false);
  });
});

describe('a worker given a profile id it does not know', () => {
  it('answers a ProfileMiss without running anything, so the pool sends the profile', async () => {
    const { default: runTask } = await import('../host/sandbox/worker/entry.js');
    const control = new ControlSlots().acquire().ref;
    expect(runTask({ kind: 'call', taskId: 1, control, submittedAt: 0, profile: 987_654, args: '{}', context: { callId: 'x' } })).toEqual({ profileMiss: 987_654 });
  });
});
