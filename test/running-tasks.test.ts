/** A worker runs one task at a time, and nothing of the next runs before the last one's answer has left. */
import { describe, expect, it } from 'vitest';
import { answerPosted, mustWait, releaseNext, taskEnded, taskStarted, waitTurn, whenNoTaskRuns } from '../host/sandbox/worker/running-tasks.js';

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('running tasks', () => {
  it('a task that ended holds the next one until its own answer is posted, not another task\'s', async () => {
    expect(mustWait(false)).toBe(false);
    taskStarted();
    expect(mustWait(false)).toBe(true);
    taskEnded(7);
    expect(mustWait(false)).toBe(true);
    // An answer that claimed nothing (a profile miss, say) is not the one leaving.
    answerPosted(8);
    expect(mustWait(false)).toBe(true);
    answerPosted(7);
    expect(mustWait(false)).toBe(false);
  });

  it('lets a waiting task through as soon as the answer is posted, before the next turn of the event loop', async () => {
    taskStarted();
    const order: string[] = [];
    const waited = waitTurn(false).then(() => order.push('next task'));
    taskEnded(1);
    await Promise.resolve();
    expect(order).toEqual([]);
    answerPosted(1);
    order.push('answer posted');
    await waited;
    expect(order).toEqual(['answer posted', 'next task']);
    releaseNext();
    await turn();
  });

  it('without a report, the answer counts as left at the next turn of the event loop', async () => {
    taskStarted();
    taskEnded(2);
    expect(mustWait(false)).toBe(true);
    await turn();
    expect(mustWait(false)).toBe(false);
  });

  it('puts a spare preparation off while a task runs, and runs it once the task is over and its answer posted', async () => {
    const ran: string[] = [];
    taskStarted();
    whenNoTaskRuns(() => ran.push('prepared'));
    await turn();
    expect(ran).toEqual([]);
    taskEnded(3);
    answerPosted(3);
    await turn();
    expect(ran).toEqual(['prepared']);
  });
});
