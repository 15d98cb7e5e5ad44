/**
 * WIT value shapes shared by the synchronous wasi:http resources, as jco
 * represents them, and the one way those resources trap.
 *
 * jco's conventions: a function whose WIT result has an error case fails by
 * throwing a plain (non-Error) value, which the glue lowers as the `err`
 * payload; throwing an Error traps the instance, which is what the WIT asks
 * for on misuse (e.g. finishing a body whose stream is still open).
 */

/** A WIT `result<T, E>` returned (not thrown) as a value. */
export type WitResult<T, E> = { tag: 'ok'; val: T } | { tag: 'err'; val: E };

/** An Error: thrown, it traps the guest instance. */
export const trap = (message: string): Error => new Error(`wasi:http: ${message}`);
