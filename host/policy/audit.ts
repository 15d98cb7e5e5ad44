/**
 * The audit log: one JSON line per policy decision worth keeping — every
 * denial, and every ELEVATED or PRIVILEGED call (PRIVILEGED at warn).
 */
import { loadPino } from '../base/logger.js';
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
  /** The call's trace and span (W3C ids), when the host traces: joins the entry to the call's spans. */
  trace_id?: string;
  span_id?: string;
}

export interface AuditLog {
  record(entry: AuditEntry, level?: 'info' | 'warn'): void;
  /** The file it appends to, if any (a host-owned path: no writable worktree may overlap it). */
  readonly file?: string;
}

/**
 * An audit log writing pino JSON lines to a file (appended) or a file descriptor (default: stderr).
 * A file is opened now (so a path that cannot be written fails at start); a descriptor's writer is
 * made at the first entry (most processes record none, and pino costs ~20 ms to load).
 */
export function createAuditLog(destination: string | number = 2): AuditLog {
  const make = (): ReturnType<ReturnType<typeof loadPino>> => {
    const pino = loadPino();
    return pino(
      { name: 'toolhost-audit', level: 'info', base: { audit: true } },
      pino.destination(typeof destination === 'number' ? { fd: destination, sync: true } : { dest: destination, sync: true, mkdir: true }),
    );
  };
  let logger = typeof destination === 'number' ? undefined : make();
  return {
    ...(typeof destination === 'number' ? {} : { file: destination }),
    record(entry, level = entry.decision === 'denied' ? 'warn' : 'info') {
      logger ??= make();
      logger[level](entry, entry.decision === 'denied' ? 'policy denied' : 'policy allowed');
    },
  };
}

