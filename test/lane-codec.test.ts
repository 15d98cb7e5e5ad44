/** Calls and their answers cross a task lane as flat arrays and come out as the objects that went in. */
import { describe, expect, it } from 'vitest';
import { decodeAnswer, decodeTask, encodeAnswer, encodeTask } from '../host/sandbox/lane-codec.js';
import type { CallProfile, CallWire, DescribeTask, GuestOutputLimits, TaskAnswer, WorkerOutcome } from '../host/sandbox/protocol.js';

const buffer = new SharedArrayBuffer(256);
const limits: GuestOutputLimits = { stdioBytes: 1, maxEvents: 2, maxEventBytes: 3, maxResultBytes: 4, maxHostCalls: 5, maxHandles: 6 };
const profile: CallProfile = { componentId: 'c', memoryMb: 64, moduleUrl: 'file:///glue.mjs', tool: 'echo', isolation: 'call', limits, network: 'DENY_ALL' };

/** Through structured clone, as postMessage would. */
const travel = <T>(value: T): T => structuredClone(value);

describe('the lane codec', () => {
  it('a plain call travels as an array and comes back the same', () => {
    const wire: CallWire = { kind: 'call', taskId: 7, control: { buffer, offset: 64 }, submittedAt: 1234.5, profile: 3, args: '{"a":1}', context: { callId: 'id-1' } };
    const message = encodeTask(wire);
    expect(Array.isArray(message)).toBe(true);
    const back = decodeTask(travel(message));
    expect(back).toEqual(wire);
    // The control block is shared, not copied.
    const view = new Int32Array((back as CallWire).control.buffer);
    view[20] = 42;
    expect(new Int32Array(buffer)[20]).toBe(42);
  });

  it('a call with every optional part keeps each of them', () => {
    const wire: CallWire = {
      kind: 'call', taskId: 8, control: { buffer, offset: 0 }, submittedAt: 1, profile: 4, args: 'null',
      context: { callId: 'id-2', conversationId: 'conv', sessionId: 'sess', agentName: 'agent' },
      fixed: profile, conversationKey: 'p\u0000conv', env: [['A', '1']], filesystem: { root: '/w', readOnly: true },
    };
    expect(decodeTask(travel(encodeTask(wire)))).toEqual(wire);
  });

  it('a describe task travels as itself', () => {
    const task: DescribeTask = { kind: 'describe', componentId: 'c', memoryMb: 64, moduleUrl: 'file:///glue.mjs', taskId: 9, control: { buffer, offset: 0 }, submittedAt: 2 };
    expect(encodeTask(task)).toBe(task);
    expect(decodeTask(travel(encodeTask(task)))).toEqual(task);
  });

  it('a value answer travels as an array, with or without its optional numbers', () => {
    const full: WorkerOutcome = { ok: true, value: '{"x":1}', accounting: { startedAt: 99.5, instance: 'restored', isolation: 'conversation', instantiateMs: 0.25, cpuMs: 0.01, cpuClock: 'thread', peakMemoryBytes: 131072, messages: 2, threadId: 3, preparing: true } };
    const bare: WorkerOutcome = { ok: true, value: 'text', accounting: { startedAt: 1, instance: 'fresh', isolation: 'worker', instantiateMs: 1.5, cpuClock: 'none', messages: 0, threadId: 4 } };
    for (const answer of [full, bare]) {
      const reply = encodeAnswer(5, answer);
      expect(Array.isArray(reply)).toBe(true);
      expect(decodeAnswer(travel(reply))).toEqual({ taskId: 5, answer });
    }
  });

  it('errors, describe results, profile misses and abandoned tasks travel as themselves', () => {
    const answers: TaskAnswer[] = [
      { ok: false, error: { code: 'TOOL_CRASHED', message: 'trap' }, accounting: { startedAt: 1, instance: 'fresh', isolation: 'call', instantiateMs: 0, cpuClock: 'thread', messages: 0, threadId: 1 } },
      { ok: true, tools: [], accounting: { startedAt: 1, instance: 'fresh', isolation: 'call', instantiateMs: 0, cpuClock: 'none', messages: 0, threadId: 1 } },
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
