/**
 * The soak's host-side accounting: per call id, how many times the registry
 * accepted it (`onCallAccepted`) and how many terminal events it ended with
 * (`onCallFinished`). A call is lost when it was accepted and has no terminal
 * once everything drained; a terminal is duplicated when an id has more than
 * one. Refused calls (stage "rejected", never accepted) must end once too.
 *
 * The ledger lives in the measured host, so it is compact: the soak's own ids
 * (`soak-<n>`, n below the planned count) are counted in two byte arrays (a
 * few hundred KiB for 100,000 calls, allocated before the start sample);
 * any other id (none is expected) goes to a map.
 */

/** Counts saturate here (one byte each); anything above 1 is already wrong. */
const CAP = 255;

export const SOAK_ID_PREFIX = 'soak-';

export interface LedgerTotals {
  /** Calls the registry accepted (tracked). */
  accepted: number;
  /** Terminal events seen (of accepted and refused calls). */
  terminals: number;
  /** Terminals of calls refused before they were accepted. */
  refused: number;
  /** Accepted calls without a terminal (yet, before the drain; after it: lost). */
  open: number;
  /** Ids with more than one terminal. */
  duplicated: number;
  /** Ids accepted more than once (the soak never reuses an id). */
  acceptedTwice: number;
  /** Ids the soak did not make. */
  foreign: number;
  /** Up to 10 ids of each problem, for the report. */
  examples: { open: string[]; duplicated: string[]; acceptedTwice: string[] };
  /** Terminal events by tool and outcome ('ok' or the code), as the host ended them (whatever a client saw). */
  byTool: Record<string, Record<string, number>>;
}

export class CallLedger {
  readonly #accepted: Uint8Array;
  readonly #terminals: Uint8Array;
  readonly #other = new Map<string, { accepted: number; terminals: number }>();
  readonly #byTool = new Map<string, Map<string, number>>();
  #acceptedCount = 0;
  #terminalCount = 0;

  /** `size`: the soak's ids `soak-0` .. `soak-<size-1>` are counted in arrays. */
  constructor(size: number) {
    if (!Number.isInteger(size) || size < 0) throw new TypeError('size must be a non-negative integer');
    this.#accepted = new Uint8Array(size);
    this.#terminals = new Uint8Array(size);
  }

  accepted(callId: string): void {
    this.#acceptedCount += 1;
    const index = this.#index(callId);
    if (index === undefined) this.#entry(callId).accepted += 1;
    else this.#accepted[index] = Math.min(CAP, this.#accepted[index]! + 1);
  }

  /** A terminal event; `tool` and `outcome` ('ok' or the error code) feed the per-tool counts. */
  terminal(callId: string, tool?: string, outcome?: string): void {
    this.#terminalCount += 1;
    if (tool !== undefined && outcome !== undefined) {
      let codes = this.#byTool.get(tool);
      if (codes === undefined) {
        codes = new Map();
        this.#byTool.set(tool, codes);
      }
      codes.set(outcome, (codes.get(outcome) ?? 0) + 1);
    }
    const index = this.#index(callId);
    if (index === undefined) this.#entry(callId).terminals += 1;
    else this.#terminals[index] = Math.min(CAP, this.#terminals[index]! + 1);
  }

  totals(): LedgerTotals {
    const totals: LedgerTotals = {
      accepted: this.#acceptedCount,
      terminals: this.#terminalCount,
      refused: 0,
      open: 0,
      duplicated: 0,
      acceptedTwice: 0,
      foreign: this.#other.size,
      examples: { open: [], duplicated: [], acceptedTwice: [] },
      byTool: Object.fromEntries([...this.#byTool].sort(([a], [b]) => a.localeCompare(b)).map(([tool, codes]) => [tool, Object.fromEntries(codes)])),
    };
    const count = (id: string, accepted: number, terminals: number): void => {
      if (accepted === 0 && terminals === 0) return;
      if (accepted === 0) totals.refused += 1;
      if (accepted > 0 && terminals === 0) note(totals, 'open', id);
      if (terminals > 1) note(totals, 'duplicated', id);
      if (accepted > 1) note(totals, 'acceptedTwice', id);
    };
    for (let index = 0; index < this.#accepted.length; index += 1) count(`${SOAK_ID_PREFIX}${index}`, this.#accepted[index]!, this.#terminals[index]!);
    for (const [id, entry] of this.#other) count(id, entry.accepted, entry.terminals);
    return totals;
  }

  #index(callId: string): number | undefined {
    if (!callId.startsWith(SOAK_ID_PREFIX)) return undefined;
    const digits = callId.slice(SOAK_ID_PREFIX.length);
    if (!/^(0|[1-9][0-9]{0,8})$/.test(digits)) return undefined;
    const index = Number(digits);
    return index < this.#accepted.length ? index : undefined;
  }

  #entry(callId: string): { accepted: number; terminals: number } {
    let entry = this.#other.get(callId);
    if (entry === undefined) {
      entry = { accepted: 0, terminals: 0 };
      this.#other.set(callId, entry);
    }
    return entry;
  }
}

function note(totals: LedgerTotals, problem: 'open' | 'duplicated' | 'acceptedTwice', id: string): void {
  totals[problem] += 1;
  if (totals.examples[problem].length < 10) totals.examples[problem].push(id);
}
