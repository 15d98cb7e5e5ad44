/** The single-consumer queue a call's events travel through, read event by event or for its last event only. */
import { describe, expect, it } from 'vitest';
import { EventChannel } from '../host/core/event-channel.js';

async function all<T>(channel: EventChannel<T>): Promise<T[]> {
  const values: T[] = [];
  for await (const value of channel) values.push(value);
  return values;
}

describe('EventChannel', () => {
  it('gives every value in order, those pushed before and after the consumer came', async () => {
    const channel = new EventChannel<number>();
    channel.push(1);
    const read = all(channel);
    channel.push(2);
    channel.close();
    channel.push(3);
    expect(await read).toEqual([1, 2]);
  });

  it('last() resolves with the value pushed just before close, keeping none of the others', async () => {
    const channel = new EventChannel<string>();
    channel.push('start');
    const last = channel.last();
    channel.push('progress');
    channel.push('result');
    channel.close();
    channel.push('after the end');
    await expect(last).resolves.toBe('result');
  });

  it('last() on a closed channel gives its last buffered value, or undefined when it had none', async () => {
    const closed = new EventChannel<string>();
    closed.push('a');
    closed.push('b');
    closed.close();
    await expect(closed.last()).resolves.toBe('b');
    const empty = new EventChannel<string>();
    empty.close();
    await expect(empty.last()).resolves.toBeUndefined();
  });

  it('has one consumer: iterating after last(), or last() after iterating, throws', () => {
    const first = new EventChannel<number>();
    void first.last();
    expect(() => first[Symbol.asyncIterator]()).toThrow(/only once/);
    const second = new EventChannel<number>();
    second[Symbol.asyncIterator]();
    expect(() => second.last()).toThrow(/only once/);
  });
});
