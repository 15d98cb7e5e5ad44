/** What the noisy fixture's guest writes, and how a test tells it apart (stdio-capture tests, library and CLI). */
import { expect } from 'vitest';
import type { LogEvent, ToolEvent } from '../host/index.js';

export const GUEST_MARKERS = ['noisy stdout line', 'noisy stderr line', 'noisy exit('];
export const DROPPED = 'further guest output dropped';

export function expectNoGuestOutput(text: string): void {
  for (const marker of GUEST_MARKERS) expect(text).not.toContain(marker);
}

/** The `log` events that carry captured guest stdout/stderr. */
export function stdioLogs(events: Array<ToolEvent | Record<string, unknown>>): LogEvent[] {
  return events.filter((event): event is LogEvent => event.type === 'log' && (event.source === 'stdout' || event.source === 'stderr'));
}

/** What `print {lines: n}` writes, in order: stdout line i, then stderr line i. */
export function expectedPrintLines(n: number): Array<{ source: 'stdout' | 'stderr'; message: string }> {
  const lines: Array<{ source: 'stdout' | 'stderr'; message: string }> = [];
  for (let i = 0; i < n; i++) {
    lines.push({ source: 'stdout', message: `noisy stdout line ${i}` });
    lines.push({ source: 'stderr', message: `noisy stderr line ${i}` });
  }
  return lines;
}
