/** While a short call's answer is out, the main thread's event loop keeps turning, bounded, and never blocks. */
import { describe, expect, it } from 'vitest';
import { AnswerPoll } from '../host/sandbox/transport/answer-poll.js';

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Answers whose outstanding-ness the test sets, counting the poll's reads and what it said about polling. */
function answers(outstanding: () => boolean) {
  const seen = { collects: 0, polling: [] as boolean[] };
  return { seen, answers: { outstanding, polling: (on: boolean) => seen.polling.push(on), collect: () => (seen.collects += 1) } };
}

describe('the answer poll', () => {
  it('keeps the loop turning while an answer is outstanding, and stops once none is', async () => {
    let outstanding = true;
    const { seen, answers: polled } = answers(() => outstanding);
    const poll = new AnswerPoll(polled);
    poll.start(1_000_000);
    for (let i = 0; i < 5; i += 1) {
      await turn();
      expect(poll.turning).toBe(true);
    }
    outstanding = false;
    await turn();
    await turn();
    expect(poll.turning).toBe(false);
    // The rings were read at every turn; workers were told the poll started and, once, that it stopped.
    expect(seen.collects).toBeGreaterThanOrEqual(6);
    expect(seen.polling).toEqual([true, false]);
  });

  it('stops at its bound even while the answer is still out', async () => {
    const poll = new AnswerPoll(answers(() => true).answers);
    poll.start(200);
    await new Promise((resolve) => setTimeout(resolve, 20));
    await turn();
    expect(poll.turning).toBe(false);
  });

  it('lets timers and I/O run meanwhile (it turns the loop, it does not block it)', async () => {
    let outstanding = true;
    const poll = new AnswerPoll(answers(() => outstanding).answers);
    poll.start(1_000_000);
    const fired = await new Promise<boolean>((resolve) => setTimeout(() => resolve(true), 5));
    expect(fired).toBe(true);
    expect(poll.turning).toBe(true);
    outstanding = false;
    await turn();
    await turn();
    expect(poll.turning).toBe(false);
  });

  it('is started again, not twice, by a second post', async () => {
    let outstanding = true;
    const poll = new AnswerPoll(answers(() => outstanding).answers);
    poll.start(1_000_000);
    poll.start(1_000_000);
    await turn();
    outstanding = false;
    await turn();
    await turn();
    expect(poll.turning).toBe(false);
  });
});
