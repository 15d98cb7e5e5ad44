/** The soak's report: what it ran, the two ledgers (host and clients), the host's samples, and the verdict. */
import type { LedgerTotals } from './ledger.js';
import type { ClientTotals } from './outcome.js';
import { CHANNELS, NATIVE_WAIT } from './plan.js';
import type { HostSample } from './protocol.js';

export interface SoakReport {
  options: { calls: number; concurrency: number; maxSeconds: number; seed: number; mcpSessions: number; grpcChannels: number };
  machine: { cpus: number; node: string; loadAverage: number[] };
  /** Calls issued before the deadline (all of them unless --max-seconds stopped it). */
  issued: number;
  stoppedByDeadline: boolean;
  seconds: number;
  hostDied: string | undefined;
  ledger: LedgerTotals | undefined;
  /** Calls in flight on the host when the ledger was read (after the drain). */
  inFlightAtEnd: number;
  client: ClientTotals;
  samples: {
    start?: HostSample;
    middle?: HostSample;
    end?: HostSample;
    /** After the clients closed their sessions and channels: what the host still holds for nobody. */
    closed?: HostSample;
    peak: PeakFigures;
  };
  /** Every periodic sample (no GC), for plots. */
  timeline: HostSample[];
  failures: string[];
}

export interface PeakFigures {
  rssBytes: number;
  heapUsedBytes: number;
  handles: number;
  fds: number;
  inFlight: number;
}

/** What deserves a look without failing the soak: resources that grew over the run, outcomes nobody planned for. */
export function warnings(report: Omit<SoakReport, 'failures'>): string[] {
  const found: string[] = [];
  const { start, closed } = report.samples;
  if (start !== undefined && closed !== undefined && report.inFlightAtEnd === 0) {
    // Growth that stays once the clients are gone is held by the host for nobody (10: pool and GC noise).
    // (At `end` the clients' keep-alive connections are still open: their sockets are not the host's to drop.)
    if (closed.fds - start.fds > 10) found.push(`open fds grew from ${start.fds} to ${closed.fds} once the clients had closed`);
    if (closed.handles - start.handles > 10) found.push(`active handles grew from ${start.handles} to ${closed.handles} once the clients had closed (${Object.entries(closed.handleTypes).map(([type, count]) => `${type} ${count}`).join(', ')})`);
  }
  // Every planned call of these tools is cancelled or stopped by its wall clock: one that ended ok ran its whole 10 s,
  // i.e. a cancel that never reached it.
  for (const tool of [NATIVE_WAIT, 'sleep_for']) {
    const ran = report.ledger?.byTool[tool]?.ok ?? 0;
    if (ran > 0) found.push(`${ran} ${tool} calls ran to their end (10 s) although their client cancelled them: the cancel did not reach the call`);
  }
  if (report.client.unexpected > 0) found.push(`${report.client.unexpected} outcomes outside their kind's expected codes (see the kinds table and the examples)`);
  return found;
}

/** Why the soak failed (empty: it passed). */
export function verdict(report: Omit<SoakReport, 'failures'>): string[] {
  const failures: string[] = [];
  const { ledger, client } = report;
  if (report.hostDied !== undefined) failures.push(`the host died: ${report.hostDied}`);
  if (ledger === undefined) failures.push('the host\'s ledger could not be read');
  else {
    if (ledger.open > 0) failures.push(`${ledger.open} accepted calls lost (no terminal event), e.g. ${ledger.examples.open.join(', ')}`);
    if (ledger.duplicated > 0) failures.push(`${ledger.duplicated} calls with duplicated terminal events, e.g. ${ledger.examples.duplicated.join(', ')}`);
    if (ledger.acceptedTwice > 0) failures.push(`${ledger.acceptedTwice} call ids accepted twice, e.g. ${ledger.examples.acceptedTwice.join(', ')}`);
  }
  if (client.missing > 0) failures.push(`${client.missing} requests got no answer`);
  if (client.duplicated > 0) failures.push(`${client.duplicated} requests got more than one terminal answer`);
  if (client.honestFailed > 0) failures.push(`${client.honestFailed} honest calls failed`);
  if (client.wrongAnswers > 0) failures.push(`${client.wrongAnswers} wrong answers`);
  const internal = client.byKind.reduce((sum, kind) => sum + (kind.byCode.INTERNAL ?? 0), 0);
  if (internal > 0) failures.push(`${internal} calls ended INTERNAL`);
  return failures;
}

const mib = (bytes: number): string => (bytes / 1024 / 1024).toFixed(1);

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? '').length)));
  return rows.map((row) => row.map((cell, column) => (column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!))).join('  ').trimEnd()).join('\n');
}

export function formatReport(report: SoakReport): string {
  const { options, client, ledger, samples } = report;
  const lines: string[] = [];
  const rate = report.seconds > 0 ? Math.round(client.answered / report.seconds) : 0;
  lines.push(`toolhost soak: ${report.issued} of ${options.calls} calls issued${report.stoppedByDeadline ? ` (stopped issuing at --max-seconds ${options.maxSeconds})` : ''}, ${client.answered} answered in ${report.seconds.toFixed(1)} s (${rate} calls/s)`);
  lines.push(`  concurrency ${options.concurrency}, ${options.mcpSessions} MCP sessions, ${options.grpcChannels} gRPC channels, seed ${options.seed}; ${report.machine.cpus} CPUs, load ${report.machine.loadAverage.map((load) => load.toFixed(2)).join(' ')}, Node ${report.machine.node}`);
  lines.push('');
  lines.push(table([
    ['channel', 'calls', 'ok', 'errors', 'mean ms'],
    ...CHANNELS.map((channel) => {
      const figures = client.byChannel[channel];
      return [channel, String(figures.calls), String(figures.ok), String(figures.errors), figures.calls === 0 ? '-' : (figures.totalMs / figures.calls).toFixed(1)];
    }),
  ]));
  lines.push('');
  lines.push(table([
    ['kind', 'category', 'calls', 'mean ms', 'outcomes', 'unexpected'],
    ...client.byKind.map((kind) => [
      kind.kind,
      kind.category,
      String(kind.calls),
      (kind.totalMs / kind.calls).toFixed(1),
      Object.entries(kind.byCode).sort(([, a], [, b]) => b - a).map(([code, count]) => `${code} ${count}`).join(', '),
      String(kind.unexpected),
    ]),
  ]));
  lines.push('');
  if (ledger !== undefined) {
    lines.push(`host ledger: ${ledger.accepted} accepted, ${ledger.refused} refused before acceptance, ${ledger.terminals} terminal events; lost ${ledger.open}, duplicated terminals ${ledger.duplicated}, ids accepted twice ${ledger.acceptedTwice}, foreign ids ${ledger.foreign}; in flight at the end ${report.inFlightAtEnd}`);
  }
  if (ledger !== undefined) {
    lines.push('host outcomes by tool (as the host ended each call, whatever its client saw):');
    for (const [tool, codes] of Object.entries(ledger.byTool)) {
      lines.push(`  ${tool}: ${Object.entries(codes).sort(([, a], [, b]) => b - a).map(([code, count]) => `${code} ${count}`).join(', ')}`);
    }
  }
  lines.push(`clients: ${client.issued} requests, ${client.answered} answered, no answer ${client.missing}, duplicated answers ${client.duplicated}, honest failures ${client.honestFailed}, wrong answers ${client.wrongAnswers}, unexpected outcomes ${client.unexpected}`);
  lines.push('');
  const row = (name: string, sample: HostSample | undefined): string[] => sample === undefined
    ? [name, '-', '-', '-', '-', '-', '-', '-', '-']
    : [name, sample.atS.toFixed(1), mib(sample.rssBytes), mib(sample.heapUsedBytes), mib(sample.heapTotalBytes), mib(sample.externalBytes), String(sample.handles), String(sample.fds), String(sample.inFlight)];
  lines.push('host process (after a full GC at start, middle, end, and once the clients closed; peak from 1 s samples without GC):');
  lines.push(table([
    ['sample', 's', 'RSS MiB', 'heap used MiB', 'heap total MiB', 'external MiB', 'handles', 'fds', 'in flight'],
    row('start', samples.start),
    row('middle', samples.middle),
    row('end', samples.end),
    row('closed', samples.closed),
    ['peak', '', mib(samples.peak.rssBytes), mib(samples.peak.heapUsedBytes), '', '', String(samples.peak.handles), String(samples.peak.fds), String(samples.peak.inFlight)],
  ]));
  for (const [name, sample] of [['start', samples.start], ['end', samples.end], ['closed', samples.closed]] as const) {
    if (sample !== undefined) lines.push(`  handles at ${name}: ${Object.entries(sample.handleTypes).sort(([, a], [, b]) => b - a).map(([type, count]) => `${type} ${count}`).join(', ')}`);
  }
  if (client.examples.length > 0) {
    lines.push('');
    lines.push('examples:');
    for (const example of client.examples) lines.push(`  ${example}`);
  }
  const noticed = warnings(report);
  if (noticed.length > 0) {
    lines.push('');
    lines.push('warnings:');
    for (const warning of noticed) lines.push(`  ${warning}`);
  }
  lines.push('');
  lines.push(report.failures.length === 0 ? 'PASS: no call lost, no terminal duplicated, every honest call answered right, the host kept serving' : `FAIL:\n${report.failures.map((failure) => `  ${failure}`).join('\n')}`);
  return lines.join('\n');
}
