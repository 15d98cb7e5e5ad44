/**
 * What crosses from a guest's wasi:http to the host and back: one buffered
 * request, and the answer (a response, or a wasi:http error code).
 */
import type { WasiHttpErrorCode } from './http-error-code.js';

/** One outgoing request, as the host receives it. */
export interface GuestHttpRequest {
  /** Upper-case for the standard methods (`GET`, `POST`, ...); as the guest spelled it for `other`. */
  method: string;
  scheme: 'http' | 'https';
  /** `host[:port]`, never empty. */
  authority: string;
  /** Starts with `/`. */
  pathWithQuery: string;
  headers: Array<[string, Uint8Array]>;
  body: Uint8Array;
  connectTimeoutMs?: number;
  firstByteTimeoutMs?: number;
  betweenBytesTimeoutMs?: number;
}

/** The host's answer: a response, or a wasi:http error code for the guest. */
export type GuestHttpResult =
  | { ok: true; status: number; headers: Array<[string, Uint8Array]>; body: Uint8Array }
  | { ok: false; error: WasiHttpErrorCode };
