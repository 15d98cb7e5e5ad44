/**
 * The wasi:http 0.2 `error-code` variant, and the one place that turns an
 * egress failure (net/errors.ts) into it. Tags are spelled as the WIT cases,
 * which is what jco's glue expects; a guest sees exactly these values.
 */
import type { EgressError, EgressFailure } from '../../net/errors.js';

/** The `DNS-error` payload (record `DNS-error-payload`). */
export interface WasiDnsErrorPayload {
  rcode?: string | undefined;
  infoCode?: number | undefined;
}

/** The `TLS-alert-received` payload. */
export interface WasiTlsAlertReceivedPayload {
  alertId?: number | undefined;
  alertMessage?: string | undefined;
}

/** The `field-size-payload` record. */
export interface WasiFieldSizePayload {
  fieldName?: string | undefined;
  fieldSize?: number | undefined;
}

/**
 * The wasi:http 0.2 `error-code` variant, as jco represents it: `tag` is the
 * WIT case name, `val` its payload (`option<u64>` is a bigint or undefined).
 */
export type WasiHttpErrorCode =
  | { tag: 'DNS-timeout' }
  | { tag: 'DNS-error'; val: WasiDnsErrorPayload }
  | { tag: 'destination-not-found' }
  | { tag: 'destination-unavailable' }
  | { tag: 'destination-IP-prohibited' }
  | { tag: 'destination-IP-unroutable' }
  | { tag: 'connection-refused' }
  | { tag: 'connection-terminated' }
  | { tag: 'connection-timeout' }
  | { tag: 'connection-read-timeout' }
  | { tag: 'connection-write-timeout' }
  | { tag: 'connection-limit-reached' }
  | { tag: 'TLS-protocol-error' }
  | { tag: 'TLS-certificate-error' }
  | { tag: 'TLS-alert-received'; val: WasiTlsAlertReceivedPayload }
  | { tag: 'HTTP-request-denied' }
  | { tag: 'HTTP-request-length-required' }
  | { tag: 'HTTP-request-body-size'; val: bigint | undefined }
  | { tag: 'HTTP-request-method-invalid' }
  | { tag: 'HTTP-request-URI-invalid' }
  | { tag: 'HTTP-request-URI-too-long' }
  | { tag: 'HTTP-request-header-section-size'; val: number | undefined }
  | { tag: 'HTTP-request-header-size'; val: WasiFieldSizePayload | undefined }
  | { tag: 'HTTP-request-trailer-section-size'; val: number | undefined }
  | { tag: 'HTTP-request-trailer-size'; val: WasiFieldSizePayload }
  | { tag: 'HTTP-response-incomplete' }
  | { tag: 'HTTP-response-header-section-size'; val: number | undefined }
  | { tag: 'HTTP-response-header-size'; val: WasiFieldSizePayload }
  | { tag: 'HTTP-response-body-size'; val: bigint | undefined }
  | { tag: 'HTTP-response-trailer-section-size'; val: number | undefined }
  | { tag: 'HTTP-response-trailer-size'; val: WasiFieldSizePayload }
  | { tag: 'HTTP-response-transfer-coding'; val: string | undefined }
  | { tag: 'HTTP-response-content-coding'; val: string | undefined }
  | { tag: 'HTTP-response-timeout' }
  | { tag: 'HTTP-upgrade-failed' }
  | { tag: 'HTTP-protocol-error' }
  | { tag: 'loop-detected' }
  | { tag: 'configuration-error' }
  | { tag: 'internal-error'; val: string | undefined };

/** The wasi:http error-code tags (the WIT case names). */
export type WasiHttpErrorTag = WasiHttpErrorCode['tag'];

/**
 * The `error-code` a guest gets for an egress failure. A policy refusal of
 * the destination is `HTTP-request-denied`; a refused address
 * `destination-IP-prohibited` (both NETWORK_DENIED on the host side).
 */
export function wasiHttpErrorCodeOf(failure: EgressFailure | EgressError): WasiHttpErrorCode {
  const f = 'failure' in failure ? failure.failure : failure;
  switch (f.kind) {
    case 'denied':
      return { tag: 'HTTP-request-denied' };
    case 'prohibited-address':
      return { tag: 'destination-IP-prohibited' };
    case 'invalid-url':
      return { tag: 'HTTP-request-URI-invalid' };
    case 'invalid-method':
      return { tag: 'HTTP-request-method-invalid' };
    case 'dns-timeout':
      return { tag: 'DNS-timeout' };
    case 'dns-error':
      return { tag: 'DNS-error', val: { rcode: f.rcode, infoCode: undefined } };
    case 'connection-refused':
      return { tag: 'connection-refused' };
    case 'connection-timeout':
      return { tag: 'connection-timeout' };
    case 'destination-unreachable':
      return { tag: 'destination-IP-unroutable' };
    case 'connection-terminated':
      return { tag: 'connection-terminated' };
    case 'tls-certificate-error':
      return { tag: 'TLS-certificate-error' };
    case 'tls-error':
      return { tag: 'TLS-protocol-error' };
    case 'response-timeout':
      return { tag: 'HTTP-response-timeout' };
    case 'read-timeout':
      return { tag: 'connection-read-timeout' };
    case 'headers-too-large':
      return { tag: 'HTTP-response-header-section-size', val: undefined };
    case 'response-incomplete':
      return { tag: 'HTTP-response-incomplete' };
    case 'body-too-large':
      return { tag: 'HTTP-response-body-size', val: f.size };
    case 'protocol-error':
      return { tag: 'HTTP-protocol-error' };
    case 'too-many-redirects':
      return { tag: 'loop-detected' };
    case 'aborted':
      return { tag: 'internal-error', val: 'request aborted' };
    case 'internal':
      return { tag: 'internal-error', val: f.message };
  }
}
