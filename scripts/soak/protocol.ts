/** The messages between the soak's driver (main.ts) and its host process (host.ts), over fork's IPC channel. */
import type { LedgerTotals } from './ledger.js';
import type { CallOutcome } from './outcome.js';

/** What the host process is started with (its one argument, as JSON). */
export interface HostArgs {
  /** The toolhost.yaml the host is made from. */
  configPath: string;
  /** Planned calls: the ledger counts ids soak-0 .. soak-<calls-1> in arrays. */
  calls: number;
  seed: number;
}

/** The host's own figures at one moment. */
export interface HostSample {
  label: string;
  /** Seconds since the servers listened. */
  atS: number;
  rssBytes: number;
  heapUsedBytes: number;
  heapTotalBytes: number;
  externalBytes: number;
  /** Whether a full GC ran just before (the host runs with --expose-gc). */
  afterGc: boolean;
  /** `process.getActiveResourcesInfo()`: how many, and by type. */
  handles: number;
  handleTypes: Record<string, number>;
  /** Entries in /proc/self/fd. */
  fds: number;
  inFlight: number;
  mcpSessions: number;
  poolThreads: number;
}

export type ToHost =
  | { type: 'call'; n: number }
  | { type: 'sample'; label: string; gc: boolean }
  | { type: 'ledger' }
  | { type: 'stop' };

export type FromHost =
  | { type: 'ready'; mcpUrl: string; grpcAddress: string; tools: number; pid: number }
  | { type: 'failed'; message: string }
  | { type: 'outcome'; outcome: CallOutcome }
  | { type: 'sample'; sample: HostSample }
  | { type: 'ledger'; totals: LedgerTotals; inFlight: number }
  | { type: 'stopped' };
