/**
 * Typed extensions: values a host hands to native tools through the context,
 * by a class or a symbol key, without serialization.
 */

/** A symbol key that remembers the type of its value. */
export type ExtensionSymbol<T> = symbol & { readonly __extensionType?: T };

/** A class key: the value is an instance of that class. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type ExtensionClass<T> = abstract new (...args: any[]) => T;

export type ExtensionKey<T> = ExtensionSymbol<T> | ExtensionClass<T>;

/** Create a typed symbol key. */
export function extensionKey<T>(description: string): ExtensionSymbol<T> {
  return Symbol(description) as ExtensionSymbol<T>;
}

export class Extensions {
  readonly #values = new Map<unknown, unknown>();

  set<T>(key: ExtensionKey<T>, value: T): this {
    if (typeof key === 'function' && !(value instanceof key)) {
      throw new TypeError(`extension value for ${key.name} must be an instance of it`);
    }
    this.#values.set(key, value);
    return this;
  }

  get<T>(key: ExtensionKey<T>): T | undefined {
    return this.#values.get(key) as T | undefined;
  }

  /** The value, or a TypeError naming the missing key. */
  require<T>(key: ExtensionKey<T>): T {
    if (!this.#values.has(key)) {
      const name = typeof key === 'function' ? key.name : key.description;
      throw new TypeError(`extension ${String(name)} is not set on this context`);
    }
    return this.#values.get(key) as T;
  }

  has(key: ExtensionKey<unknown>): boolean {
    return this.#values.has(key);
  }

  delete(key: ExtensionKey<unknown>): boolean {
    return this.#values.delete(key);
  }
}
