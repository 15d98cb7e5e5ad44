/**
 * A host's record in the fleet view (`<prefix>host:<id>`, renewed by each
 * host's heartbeat) and reading every live one back (`toolhost fleet`).
 *
 * Guarantees: every record read is checked against its shape; one that is not
 * JSON, or lacks a field, or has a field of the wrong type, is skipped and
 * reported to `onSkipped` (with the host id and why), and the others are
 * still answered: one bad record (a host of another version, a hand edit, a
 * hostile writer to the shared Redis) never hides the fleet. A record's extra
 * fields are kept as they are; `servers`, when present, must be a map of
 * strings.
 *
 * It does not trust what the records say (they are what hosts claim), and it
 * does not sanitize strings for a terminal: the CLI does that when it prints.
 */
import type { RedisLink } from './link.js';

/** One call in a host's record. */
export interface FleetHostCall {
  callId: string;
  /** The principal that started it (absent: the library or an unauthenticated client). */
  principal?: string;
  tool: string;
  /** Whom it counts against (its principal, or `(anonymous)`). */
  tenant?: string;
  /** The client-chosen agent name (else session) within the tenant. */
  agent?: string;
  startedAt: string;
}

/** A host's record, as `toolhost fleet` shows it. */
export interface FleetHostRecord {
  hostId: string;
  pid: number;
  hostname: string;
  startedAt: string;
  heartbeatAt: string;
  inFlight: number;
  calls: FleetHostCall[];
  /** The host's servers and their addresses (`mcp`, `grpc`), when it has any. */
  servers?: Record<string, string>;
  [extra: string]: unknown;
}

/** Why a record was skipped. */
export type SkippedRecord = (hostId: string, problem: string) => void;

type Checked<T> = { value: T } | { problem: string };

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

function checkCall(value: unknown, at: string): Checked<FleetHostCall> {
  if (!isRecord(value)) return { problem: `${at} is not an object` };
  for (const field of ['callId', 'tool', 'startedAt'] as const) {
    if (typeof value[field] !== 'string') return { problem: `${at}.${field} is not a string` };
  }
  for (const field of ['principal', 'tenant', 'agent'] as const) {
    if (value[field] !== undefined && typeof value[field] !== 'string') return { problem: `${at}.${field} is not a string` };
  }
  const call: FleetHostCall = { callId: value.callId as string, tool: value.tool as string, startedAt: value.startedAt as string };
  for (const field of ['principal', 'tenant', 'agent'] as const) {
    if (typeof value[field] === 'string') call[field] = value[field] as string;
  }
  return { value: call };
}

/** `raw` (a record's JSON text) as a checked record, or why it is not one. */
export function parseHostRecord(raw: string): Checked<FleetHostRecord> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch (error) {
    return { problem: `not JSON (${(error as Error).message})` };
  }
  if (!isRecord(parsed)) return { problem: 'not a JSON object' };
  for (const field of ['hostId', 'hostname', 'startedAt', 'heartbeatAt'] as const) {
    if (typeof parsed[field] !== 'string') return { problem: `${field} is not a string` };
  }
  for (const field of ['pid', 'inFlight'] as const) {
    const value = parsed[field];
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) return { problem: `${field} is not a non-negative integer` };
  }
  if (!Array.isArray(parsed.calls)) return { problem: 'calls is not an array' };
  const calls: FleetHostCall[] = [];
  for (const [i, entry] of parsed.calls.entries()) {
    const call = checkCall(entry, `calls[${i}]`);
    if ('problem' in call) return call;
    calls.push(call.value);
  }
  if (parsed.servers !== undefined && (!isRecord(parsed.servers) || Object.values(parsed.servers).some((address) => typeof address !== 'string'))) {
    return { problem: 'servers is not a map of addresses' };
  }
  return { value: { ...parsed, calls } as FleetHostRecord };
}

/**
 * Every live host's record (what `toolhost fleet` prints), in the order of
 * the hosts set; a record that does not check out is skipped and reported to
 * `onSkipped`. A host whose record expired between the two reads is left out.
 */
export async function readFleet(link: RedisLink, prefix = 'toolhost:', onSkipped: SkippedRecord = () => undefined): Promise<FleetHostRecord[]> {
  const ids = (await link.command<unknown[]>(['ZRANGEBYSCORE', `${prefix}hosts`, String(Date.now()), '+inf'])).map(String);
  if (ids.length === 0) return [];
  // On a cluster the records are in as many slots as hosts: one GET each (MGET is single-slot).
  const records = link.mode === 'cluster'
    ? await Promise.all(ids.map((id) => link.command<string | null>(['GET', `${prefix}host:${id}`])))
    : await link.command<Array<string | null>>(['MGET', ...ids.map((id) => `${prefix}host:${id}`)]);
  const hosts: FleetHostRecord[] = [];
  records.forEach((raw, i) => {
    if (raw === null || raw === undefined) return;
    const record = parseHostRecord(String(raw));
    if ('problem' in record) onSkipped(ids[i]!, record.problem);
    else hosts.push(record.value);
  });
  return hosts;
}
