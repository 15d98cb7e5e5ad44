/**
 * The refusals the host gave a call's tool (a sampling or elicitation request
 * refused, a state write refused), kept so that a tool that fails with one of
 * them ends its call with the host's error (`PERMISSION_DENIED`,
 * `CLIENT_UNSUPPORTED`, ...) instead of `TOOL_ERROR` (see precedence.ts).
 *
 * Guarantees: a tool can surface only a code the host really gave it during
 * this call, and the caller then gets the host's own message and details,
 * never the tool's text; a tool that reports a host code the host never gave it
 * stays `TOOL_ERROR`. What is kept is bounded ({@link MAX_KEPT} refusals, each
 * of the host's own making) whatever the tool does.
 * Does not: tell a tool that relays a refusal from one that merely repeats its code.
 */
import type { ToolErrorData } from '../../base/errors.js';

/** Refusals kept per call: the distinct ones (by code and message), first come. */
const MAX_KEPT = 16;

export class HostRefusals {
  readonly #kept: ToolErrorData[] = [];

  /** The host refused one of the tool's requests with `error`. */
  note(error: ToolErrorData): void {
    if (this.#kept.length >= MAX_KEPT || this.#kept.some((kept) => kept.code === error.code && kept.message === error.message)) return;
    this.#kept.push({ code: error.code, message: error.message, ...(error.details === undefined ? {} : { details: error.details }) });
  }

  /**
   * The refusal a tool's own error stands for: the one with its code and message, else the last one with its
   * code; undefined when the host gave the tool no refusal of that code.
   */
  match(code: unknown, message: string): ToolErrorData | undefined {
    if (typeof code !== 'string') return undefined;
    const same = this.#kept.filter((kept) => kept.code === code);
    return same.find((kept) => kept.message === message) ?? same.at(-1);
  }
}
