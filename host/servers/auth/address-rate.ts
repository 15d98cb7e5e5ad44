/**
 * A rate per client address: a token bucket per address (`rate` tokens a
 * second, at most `burst` held), in a table of at most `maxAddresses`
 * buckets. Used by introspection.ts so that no client drives the host's
 * requests to the authorization server faster than its rate.
 *
 * Guarantees: an address takes at most `burst` + `rate` × seconds; the table
 * never holds more than `maxAddresses` buckets (the least recently seen is
 * forgotten first, and comes back full); IPv4-mapped IPv6 addresses count as
 * their IPv4 address, and IPv6 addresses by their /64 (one subscriber's
 * prefix: rotating addresses inside it gains nothing); text that is not an
 * address (a Unix socket's peer) shares one bucket.
 *
 * It does not bound many addresses together: a client with many prefixes
 * gets a bucket on each (or a fresh one after eviction); the global bound
 * on requests in flight (introspection.ts) is what holds then.
 */
import { formatAddress, networkAddress, parseAddress, unmapped } from '../../net/addresses.js';

interface Bucket {
  tokens: number;
  at: number;
}

export class AddressRate {
  readonly #rate: number;
  readonly #burst: number;
  readonly #maxAddresses: number;
  /** Buckets by address key, least recently seen first. */
  readonly #buckets = new Map<string, Bucket>();

  /** `rate` per second (0: no limit), `burst` the bucket's size. */
  constructor(rate: number, burst: number, maxAddresses: number) {
    this.#rate = rate;
    this.#burst = burst;
    this.#maxAddresses = maxAddresses;
  }

  /** Buckets held now. */
  get size(): number {
    return this.#buckets.size;
  }

  /**
   * Take one token for `address`: 0 when taken, else the seconds until one is there.
   * Undefined addresses (a library caller, no server in front) are not limited.
   */
  take(address: string | undefined, now = Date.now()): number {
    if (this.#rate === 0 || address === undefined) return 0;
    const key = addressKey(address);
    let bucket = this.#buckets.get(key);
    if (bucket === undefined) {
      bucket = { tokens: this.#burst, at: now };
      if (this.#buckets.size >= this.#maxAddresses) this.#buckets.delete(this.#buckets.keys().next().value as string);
    } else {
      this.#buckets.delete(key);
      bucket.tokens = Math.min(this.#burst, bucket.tokens + ((now - bucket.at) / 1000) * this.#rate);
      bucket.at = now;
    }
    this.#buckets.set(key, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return 0;
    }
    return (1 - bucket.tokens) / this.#rate;
  }
}

/** The key an address counts under: IPv4 as is (unmapped), IPv6 by its /64, anything else one shared key. */
export function addressKey(text: string): string {
  const parsed = parseAddress(text);
  if (parsed === undefined) return '(not an address)';
  const address = unmapped(parsed);
  return address.family === 4 ? formatAddress(address) : `${formatAddress(networkAddress(address, 64))}/64`;
}
