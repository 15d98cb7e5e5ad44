import type { AuditEntry, AuditLog } from './audit.js';

/** An audit log that keeps entries in memory (tests, embedding). */
export class MemoryAuditLog implements AuditLog {
  readonly entries: Array<AuditEntry & { level: 'info' | 'warn' }> = [];

  record(entry: AuditEntry, level: 'info' | 'warn' = entry.decision === 'denied' ? 'warn' : 'info'): void {
    this.entries.push({ ...entry, level });
  }
}
