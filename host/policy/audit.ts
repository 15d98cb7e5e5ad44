/**
 * The audit log: one JSON line per policy decision worth keeping — every
 * denial, and every ELEVATED or PRIVILEGED call (PRIVILEGED at warn).
 */
import { pino } from 'pino';
import type { NetworkLabel, PrivilegeLabel } from './labels.js';

export interface AuditEntry {
  callId: string;
  tool: string;
  network?: NetworkLabel;
  privilege?: PrivilegeLabel;
  decision: 'allowed' | 'denied';
  /** The error code of a denial. */
  code?: string;
  reason?: string;
  /** What was used (e.g. env keys handed over, the worktree and its mode). */
  grants?: Record<string, unknown>;
}

export interface AuditLog {
  record(entry: AuditEntry, level?: 'info' | 'warn'): void;
}

/** An audit log writing pino JSON lines to a file (appended) or a file descriptor (default: stderr). */
export function createAuditLog(destination: string | number = 2): AuditLog {
  const logger = pino(
    { name: 'toolhost-audit', level: 'info', base: { audit: true } },
    pino.destination(typeof destination === 'number' ? { fd: destination, sync: true } : { dest: destination, sync: true, mkdir: true }),
  );
  return {
    record(entry, level = entry.decision === 'denied' ? 'warn' : 'info') {
      logger[level](entry, entry.decision === 'denied' ? 'policy denied' : 'policy allowed');
    },
  };
}

