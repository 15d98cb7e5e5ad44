/**
 * The client side of the soak's accounting: what each request got back. A
 * request must get exactly one answer (a result, an error, or, for a call the
 * client cancelled itself, the client's own abort); honest calls must answer
 * ok with the right value. The tally groups outcomes by kind and channel.
 */
import { KINDS, type Category, type Channel, type Kind } from './plan.js';

/** Client-side codes for answers that are not the host's: the client aborted, or never got an answer. */
export const CLIENT_ABORTED = 'CLIENT_ABORTED';
export const NO_ANSWER = 'NO_ANSWER';

export interface CallOutcome {
  n: number;
  channel: Channel;
  kind: string;
  /** 'ok', the host's error code, or CLIENT_ABORTED / NO_ANSWER, or a transport's status (`grpc:<name>`). */
  code: string;
  /** Terminal answers the client saw for this request (must be 1). */
  answers: number;
  /** An honest call whose value was not the expected one: what came instead (shortened). */
  wrong?: string;
  /** For an error the host answered: its reason and message, shortened (shown in the report's examples). */
  detail?: string;
  ms: number;
}

/** The answer a client got, checked against the kind: the same for every channel. */
export function judge(kind: Kind, n: number, code: string, value: unknown): string | undefined {
  if (code !== 'ok' || kind.answer === undefined) return undefined;
  const wanted = JSON.stringify(kind.answer(n));
  const got = JSON.stringify(value);
  return got === wanted ? undefined : (got ?? 'undefined').slice(0, 200);
}

export interface KindTally {
  kind: string;
  category: Category;
  calls: number;
  byCode: Record<string, number>;
  unexpected: number;
  /** Sum of the calls' times as their clients saw them (ms). */
  totalMs: number;
}

export interface ClientTotals {
  issued: number;
  answered: number;
  /** Requests that got no answer at all (the client gave up after its own long timeout). */
  missing: number;
  /** Requests that got more than one terminal answer. */
  duplicated: number;
  honestFailed: number;
  wrongAnswers: number;
  unexpected: number;
  byChannel: Record<Channel, { calls: number; ok: number; errors: number; totalMs: number }>;
  byKind: KindTally[];
  /** A few problems, for the report. */
  examples: string[];
}

export class ClientTally {
  readonly #byKind = new Map<string, KindTally>();
  readonly #totals: ClientTotals = {
    issued: 0,
    answered: 0,
    missing: 0,
    duplicated: 0,
    honestFailed: 0,
    wrongAnswers: 0,
    unexpected: 0,
    byChannel: { library: empty(), mcp: empty(), grpc: empty() },
    byKind: [],
    examples: [],
  };

  issued(): void {
    this.#totals.issued += 1;
  }

  record(outcome: CallOutcome): void {
    const totals = this.#totals;
    const kind = KINDS.find((candidate) => candidate.name === outcome.kind);
    if (kind === undefined) throw new Error(`unknown kind ${outcome.kind}`);
    let tally = this.#byKind.get(kind.name);
    if (tally === undefined) {
      tally = { kind: kind.name, category: kind.category, calls: 0, byCode: {}, unexpected: 0, totalMs: 0 };
      this.#byKind.set(kind.name, tally);
    }
    tally.calls += 1;
    tally.totalMs += outcome.ms;
    tally.byCode[outcome.code] = (tally.byCode[outcome.code] ?? 0) + 1;
    const channel = totals.byChannel[outcome.channel];
    channel.calls += 1;
    channel.totalMs += outcome.ms;
    if (outcome.code === 'ok') channel.ok += 1;
    else channel.errors += 1;
    if (outcome.answers === 0) {
      totals.missing += 1;
      this.#example(`soak-${outcome.n} (${outcome.channel}, ${kind.name}): no answer`);
    } else {
      totals.answered += 1;
    }
    if (outcome.answers > 1) {
      totals.duplicated += 1;
      this.#example(`soak-${outcome.n} (${outcome.channel}, ${kind.name}): ${outcome.answers} terminal answers`);
    }
    if (outcome.wrong !== undefined) {
      totals.wrongAnswers += 1;
      this.#example(`soak-${outcome.n} (${outcome.channel}, ${kind.name}): wrong answer ${outcome.wrong}`);
    }
    const fine = kind.expect.includes(outcome.code) || (kind.cancelAfterMs !== undefined && outcome.code === CLIENT_ABORTED);
    if (kind.category === 'honest' && (outcome.code !== 'ok' || outcome.wrong !== undefined)) {
      totals.honestFailed += 1;
      this.#example(`soak-${outcome.n} (${outcome.channel}, ${kind.name}): honest call ended ${outcome.code}${outcome.detail === undefined ? '' : ` (${outcome.detail})`}`);
    } else if (!fine) {
      tally.unexpected += 1;
      totals.unexpected += 1;
      this.#example(`soak-${outcome.n} (${outcome.channel}, ${kind.name}): unexpected ${outcome.code}${outcome.detail === undefined ? '' : ` (${outcome.detail})`}`);
    }
  }

  totals(): ClientTotals {
    return { ...this.#totals, byKind: KINDS.map((kind) => this.#byKind.get(kind.name)).filter((tally): tally is KindTally => tally !== undefined) };
  }

  #example(text: string): void {
    if (this.#totals.examples.length < 20) this.#totals.examples.push(text);
  }
}

function empty(): { calls: number; ok: number; errors: number; totalMs: number } {
  return { calls: 0, ok: 0, errors: 0, totalMs: 0 };
}
