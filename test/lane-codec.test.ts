/** Calls and their answers cross a task lane as flat arrays and come out as the objects that went in. */
import { describe, expect, it } from 'vitest';
import { carriesBuffer, decodeAnswer, decodeTask, encodeAnswer, encodeTask } from '../host/sandbox/transport/lane-codec.js';
import type { CallProfile, CallWire, DescribeTask, GuestOutputLimits, TaskAnswer, WorkerOutcome } from '../host/sandbox/protocol.js';

const buffer = new SharedArrayBuffer(256);
const limits: GuestOutputLimits = { stdioBytes: 1, maxEvents: 2, maxEventBytes: 3, maxResultBytes: 4, maxHostCalls: 5, maxHandles: 6 };
const profile: CallProfile = { componentId: 'c', memoryMb: 64, moduleUrl: 'file:///glue.mjs', tool: 'echo', isolation: 'call', limits, network: 'DENY_ALL' };

/** Through structured clone, as postMessage would. */
const travel = <T>(value: T): T => structuredClone(value);

describe('the lane codec', () => {
  it('a plain call travels as an array and comes back the same', () => {
    const wire: CallWire = { kind: 'call', taskId: 7, control: { buffer, bufferId: 0, offset: 64 }, submittedAt: 1234.5, profile: 3, args: '{"a":1}', context: { callId: 'id-1' } };
    const message = encodeTask(wire, new Set());
    expect(Array.isArray(message)).toBe(true);
    const back = decodeTask(travel(message), new Map());
    expect(back).toEqual(wire);
    // The control block is shared, not copied.
    const view = new Int32Array((back as CallWire).control.buffer);
    view[20] = 42;
    expect(new Int32Array(buffer)[20]).toBe(42);
  });

  it('a call with every optional part keeps each of them', () => {
    const wire: CallWire = {
      kind: 'call', taskId: 8, control: { buffer, bufferId: 0, offset: 0 }, submittedAt: 1, profile: 4, args: 'null',
      context: { callId: 'id-2', conversationId: 'conv', sessionId: 'sess', agentName: 'agent' },
      fixed: profile, conversationKey: 'p\u0000conv', env: [['A', '1']], filesystem: { root: '/w', readOnly: true },
    };
    expect(decodeTask(travel(encodeTask(wire, new Set())), new Map())).toEqual(wire);
  });

  it("a call's profile goes to a worker not known to hold it, and is left out for one that is", () => {
    const knownBy = new Set([2]);
    const wire: CallWire = { kind: 'call', taskId: 9, control: { buffer, bufferId: 0, offset: 0 }, submittedAt: 1, profile: 4, args: '{}', context: { callId: 'id-3' }, fixed: profile, knownBy };
    expect(decodeTask(travel(encodeTask(wire, new Set([0]), 1)), new Map([[0, buffer]]))).toMatchObject({ fixed: profile });
    const toKnown = decodeTask(travel(encodeTask(wire, new Set([0]), 2)), new Map([[0, buffer]]));
    expect(toKnown).not.toHaveProperty('fixed');
    // Never sent: the set is the pool's own.
    expect(toKnown).not.toHaveProperty('knownBy');
  });

  it('a describe task travels as itself', () => {
    const task: DescribeTask = { kind: 'describe', componentId: 'c', memoryMb: 64, moduleUrl: 'file:///glue.mjs', taskId: 9, control: { buffer, bufferId: 0, offset: 0 }, submittedAt: 2 };
    expect(encodeTask(task, new Set())).toBe(task);
    expect(decodeTask(travel(encodeTask(task, new Set())), new Map())).toEqual(task);
  });

  it('carries a control buffer once per lane: later calls name it, and the worker finds the same shared memory', () => {
    const other = new SharedArrayBuffer(256);
    const call = (taskId: number, control: CallWire['control']): CallWire => ({ kind: 'call', taskId, control, submittedAt: 1, profile: 1, args: '{}', context: { callId: `id-${taskId}` } });
    const sent = new Set<number>();
    const received = new Map<number, SharedArrayBuffer>();
    const first = encodeTask(call(1, { buffer, bufferId: 0, offset: 0 }), sent);
    const second = encodeTask(call(2, { buffer, bufferId: 0, offset: 48 }), sent);
    const third = encodeTask(call(3, { buffer: other, bufferId: 1, offset: 96 }), sent);
    expect([first, second, third].map(carriesBuffer)).toEqual([0, undefined, 1]);
    const backs = [first, second, third].map((message) => decodeTask(travel(message), received) as CallWire);
    expect(backs.map((back) => [back.control.bufferId, back.control.offset])).toEqual([[0, 0], [0, 48], [1, 96]]);
    // One SharedArrayBuffer object on the receiving side for both calls on buffer 0, sharing memory with the sender's.
    expect(backs[1]!.control.buffer).toBe(backs[0]!.control.buffer);
    new Int32Array(backs[1]!.control.buffer)[13] = 7;
    expect(new Int32Array(buffer)[13]).toBe(7);
    new Int32Array(backs[2]!.control.buffer)[25] = 9;
    expect(new Int32Array(other)[25]).toBe(9);
  });

  it('a call that names a buffer its lane never carried is refused (a broken lane, not a guessed buffer)', () => {
    const named = encodeTask({ kind: 'call', taskId: 4, control: { buffer, bufferId: 5, offset: 0 }, submittedAt: 1, profile: 1, args: '{}', context: { callId: 'x' } }, new Set([5]));
    expect(() => decodeTask(travel(named), new Map())).toThrow(/control buffer 5/);
  });

  it('a value answer travels as an array, with or without its optional numbers', () => {
    const full: WorkerOutcome = { ok: true, value: '{"x":1}', accounting: { startedAt: 99.5, ranMs: 0.031, instance: 'restored', isolation: 'conversation', instantiateMs: 0.25, cpuMs: 0.01, cpuClock: 'thread', peakMemoryBytes: 131072, threadId: 3, preparing: true } };
    const bare: WorkerOutcome = { ok: true, value: 'text', accounting: { startedAt: 1, instance: 'fresh', isolation: 'worker', instantiateMs: 1.5, cpuClock: 'none', threadId: 4 } };
    for (const answer of [full, bare]) {
      const reply = encodeAnswer(5, answer);
      expect(Array.isArray(reply)).toBe(true);
      expect(decodeAnswer(travel(reply))).toEqual({ taskId: 5, answer });
    }
  });

  it('errors, describe results, profile misses and abandoned tasks travel as themselves', () => {
    const answers: TaskAnswer[] = [
      { ok: false, error: { code: 'TOOL_CRASHED', message: 'trap' }, accounting: { startedAt: 1, instance: 'fresh', isolation: 'call', instantiateMs: 0, cpuClock: 'thread', threadId: 1 } },
      { ok: true, tools: [], accounting: { startedAt: 1, instance: 'fresh', isolation: 'call', instantiateMs: 0, cpuClock: 'none', threadId: 1 } },
      { profileMiss: 3 },
      { abandoned: 6 },
    ];
    for (const answer of answers) {
      const reply = encodeAnswer(6, answer);
      expect(Array.isArray(reply)).toBe(false);
      expect(decodeAnswer(travel(reply))).toEqual({ taskId: 6, answer });
    }
    expect(decodeAnswer({ taskId: 6, error: 'the worker failed' })).toEqual({ taskId: 6, error: 'the worker failed' });
  });
});
