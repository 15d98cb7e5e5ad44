import { describe, expect, it } from 'vitest';
import { ChurnTable } from '../host/core/churn-table.js';

describe('ChurnTable', () => {
  it('keeps, replaces and removes entries by string key, and counts them', () => {
    const table = new ChurnTable<string, { n: number }>();
    expect(table.size).toBe(0);
    table.set('a', { n: 1 });
    table.set('b', { n: 2 });
    table.set('a', { n: 3 });
    expect(table.size).toBe(2);
    expect(table.get('a')).toEqual({ n: 3 });
    expect(table.has('b')).toBe(true);
    expect(table.delete('b')).toBe(true);
    expect(table.delete('b')).toBe(false);
    expect(table.has('b')).toBe(false);
    expect(table.get('b')).toBeUndefined();
    expect(table.size).toBe(1);
  });

  it('takes numeric keys, and keys that are Object.prototype members', () => {
    const table = new ChurnTable<number | string, string>();
    table.set(1, 'one');
    table.set(1_000_000, 'million');
    table.set('__proto__', 'proto');
    table.set('constructor', 'ctor');
    expect(table.get(1)).toBe('one');
    expect(table.get(1_000_000)).toBe('million');
    expect(table.get('__proto__')).toBe('proto');
    expect(table.get('constructor')).toBe('ctor');
    expect(table.has('toString')).toBe(false);
    expect(table.size).toBe(4);
  });

  it('gives its values as a copy that later changes do not touch', () => {
    const table = new ChurnTable<number, string>();
    for (let i = 0; i < 5; i += 1) table.set(i, `v${i}`);
    const values = table.values();
    for (const _ of values) table.delete(0);
    table.set(9, 'v9');
    expect(values).toEqual(['v0', 'v1', 'v2', 'v3', 'v4']);
    expect(table.values()).toHaveLength(5);
  });

  it('gives its keys with their values, in the order they were added', () => {
    const table = new ChurnTable<string, number>();
    table.set('b', 2);
    table.set('a', 1);
    table.set('c', 3);
    table.delete('a');
    table.set('b', 20);
    expect(table.entries()).toEqual([['b', 20], ['c', 3]]);
  });

  it('is empty after clear, and fills again', () => {
    const table = new ChurnTable<number, string>();
    table.set(3, 'c');
    table.set(1, 'a');
    table.clear();
    expect(table.size).toBe(0);
    expect(table.values()).toEqual([]);
    table.set(2, 'b');
    expect(table.values()).toEqual(['b']);
  });

  it('gives its values in the order they were added, as the process supervisor relies on (oldest job first)', () => {
    const table = new ChurnTable<number, number>();
    for (const id of [1, 5, 7, 12, 100]) table.set(id, id);
    table.delete(7);
    table.set(200, 200);
    expect(table.values()).toEqual([1, 5, 12, 100, 200]);
  });

  it('stays correct through heavy churn', () => {
    const table = new ChurnTable<string, number>();
    const live: string[] = [];
    for (let i = 0; i < 20_000; i += 1) {
      const key = `call-${i}`;
      table.set(key, i);
      live.push(key);
      if (live.length > 8) expect(table.delete(live.shift()!)).toBe(true);
    }
    expect(table.size).toBe(8);
    expect(table.values().sort((a, b) => a - b)).toEqual(Array.from({ length: 8 }, (_, k) => 19_992 + k));
  });
});
