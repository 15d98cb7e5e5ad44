/** A lane's answer ring: answers cross exactly, kicks are coalesced, and none is lost when the worker exits. */
import { MessageChannel } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { ANSWER_RING_SLOTS, AnswerRing } from '../host/sandbox/transport/answer-ring.js';
import { LANE_KICK, decodeAnswer, encodeAnswer, type ValueMessage } from '../host/sandbox/transport/lane-codec.js';
import { TaskLanes } from '../host/sandbox/transport/task-lanes.js';
import { TaskRing } from '../host/sandbox/transport/task-ring.js';
import type { TaskAnswer, TaskWire } from '../host/sandbox/protocol.js';

const closers: Array<() => unknown> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

function valueAnswer(taskId: number, value: string, extra: { cpuMs?: number; peakMemoryBytes?: number; ranMs?: number; preparing?: boolean } = {}): ValueMessage {
  const answer: TaskAnswer = {
    ok: true,
    value,
    accounting: { startedAt: 1732550400123.5, instance: 'restored', isolation: 'call', instantiateMs: 0.25, cpuClock: 'thread', threadId: 3, ...extra },
  };
  return encodeAnswer(taskId, answer) as ValueMessage;
}

describe('an answer ring', () => {
  it('carries an answer exactly, absent numbers included', () => {
    const worker = new AnswerRing();
    const pool = new AnswerRing(worker.buffer);
    const full = valueAnswer(1, '{"text":"héllo 🎉 \ud800"}', { cpuMs: 0.125, peakMemoryBytes: 131072, ranMs: 0.5, preparing: true });
    const bare = valueAnswer(2, '');
    expect(worker.push(full)).toBe(true);
    expect(worker.push(bare)).toBe(true);
    expect(decodeAnswer(pool.take()!)).toEqual(decodeAnswer(full));
    expect(decodeAnswer(pool.take()!)).toEqual(decodeAnswer(bare));
    expect(pool.take()).toBeUndefined();
  });

  it('refuses a value too long for a slot, and any answer when full', () => {
    const worker = new AnswerRing();
    expect(worker.push(valueAnswer(1, 'x'.repeat(4096)))).toBe(false);
    for (let i = 0; i < ANSWER_RING_SLOTS; i += 1) expect(worker.push(valueAnswer(i, '{}'))).toBe(true);
    expect(worker.push(valueAnswer(99, '{}'))).toBe(false);
  });

  it('asks for one kick until the pool reads it, and none while the pool polls', () => {
    const worker = new AnswerRing();
    const pool = new AnswerRing(worker.buffer);
    expect(worker.needsKick()).toBe(true);
    expect(worker.needsKick()).toBe(false);
    pool.polling(false);
    expect(worker.needsKick()).toBe(true);
    pool.polling(true);
    expect(worker.needsKick()).toBe(false);
  });
});

describe('a lane with rings', () => {
  function openLane() {
    const { port1, port2 } = new MessageChannel();
    closers.push(() => port1.close(), () => port2.close());
    const lanes = new TaskLanes({ freed: () => {}, stopping: () => false });
    const tasks = new TaskRing();
    const answers = new AnswerRing();
    lanes.open(7, port1, undefined, { tasks: new TaskRing(tasks.buffer), answers: new AnswerRing(answers.buffer) });
    return { lanes, worker: { port: port2, answers } };
  }
  const describeTask = (taskId: number): TaskWire => ({ kind: 'describe', taskId, componentId: 'c', moduleUrl: 'file:///x.mjs', memoryMb: 64, control: { buffer: new SharedArrayBuffer(64), bufferId: 0, offset: 0 }, submittedAt: 0 });

  it('reads the answers a kick brings, several at once', async () => {
    const { lanes, worker } = openLane();
    const answered = [1, 2, 3].map((taskId) => lanes.post(7, describeTask(taskId)));
    const kicks = [1, 2, 3].map((taskId) => worker.answers.push(valueAnswer(taskId, `"${taskId}"`)) && worker.answers.needsKick());
    // One kick for the three: the pool had not read the ring between them.
    expect(kicks).toEqual([true, false, false]);
    worker.port.postMessage(LANE_KICK);
    const values = await Promise.all(answered);
    expect(values.map((answer) => ('value' in answer ? answer.value : undefined))).toEqual(['"1"', '"2"', '"3"']);
  });

  it('reads what the worker left in its ring when it exits, rather than failing those tasks', async () => {
    const { lanes, worker } = openLane();
    const left = lanes.post(7, describeTask(1));
    const lost = lanes.post(7, describeTask(2));
    // The worker answers task 1 and exits before its kick goes out.
    worker.answers.push(valueAnswer(1, '"done"'));
    worker.port.close();
    await expect(left).resolves.toMatchObject({ ok: true, value: '"done"' });
    await expect(lost).rejects.toThrow(/exited/);
  });

  it('polls: answers are read when asked, and a ring read last when polling stops', () => {
    const { lanes, worker } = openLane();
    const settled: unknown[] = [];
    void lanes.post(7, describeTask(1)).then((answer) => settled.push(answer));
    lanes.polling(true);
    worker.answers.push(valueAnswer(1, '"polled"'));
    expect(worker.answers.needsKick()).toBe(false);
    lanes.collect();
    expect(lanes.load(7)).toBe(0);
    void lanes.post(7, describeTask(2));
    worker.answers.push(valueAnswer(2, '"at the stop"'));
    lanes.polling(false);
    expect(lanes.load(7)).toBe(0);
  });
});
