/**
 * The wasi:http `fields` resource (headers and trailers) and the syntax rules
 * every field name and value must follow.
 */

import { FORBIDDEN_HEADERS } from '../../net/headers.js';

// Field names a guest may not set, read or send: the host's one list (hop-by-hop + host).
export { FORBIDDEN_HEADERS };

/** RFC 9110 `token`: field names and methods. */
export const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** Bytes of a valid field value: HTAB, visible ASCII and space, obs-text. */
export const isFieldValue = (value: Uint8Array): boolean => value.every((byte) => byte === 0x09 || (byte >= 0x20 && byte !== 0x7f));

export type FieldEntry = [string, Uint8Array];
type HeaderError = { tag: 'invalid-syntax' | 'forbidden' | 'immutable' };

const headerError = (tag: HeaderError['tag']): HeaderError => ({ tag });

// Access to Fields' private state for the other wasi:http resources (set in its static block).
let lockedFieldsOf: (entries: readonly FieldEntry[]) => Fields;
let entriesOf: (fields: Fields) => readonly FieldEntry[];

export class Fields {
  #entries: FieldEntry[] = [];
  #immutable = false;

  static {
    lockedFieldsOf = (entries) => {
      const fields = new Fields();
      fields.#entries = entries.map(([name, value]) => [name, value]);
      fields.#immutable = true;
      return fields;
    };
    entriesOf = (fields) => fields.#entries;
  }

  static fromList(entries: FieldEntry[]): Fields {
    const fields = new Fields();
    for (const [name, value] of entries) fields.append(name, value);
    return fields;
  }

  get(name: string): Uint8Array[] {
    const key = name.toLowerCase();
    return this.#entries.filter(([entry]) => entry.toLowerCase() === key).map(([, value]) => value.slice());
  }

  has(name: string): boolean {
    const key = name.toLowerCase();
    return this.#entries.some(([entry]) => entry.toLowerCase() === key);
  }

  set(name: string, values: Uint8Array[]): void {
    this.#checkWritable(name);
    if (!values.every(isFieldValue)) throw headerError('invalid-syntax');
    this.#remove(name);
    for (const value of values) this.#entries.push([name, value.slice()]);
  }

  delete(name: string): void {
    this.#checkWritable(name);
    this.#remove(name);
  }

  append(name: string, value: Uint8Array): void {
    this.#checkWritable(name);
    if (!isFieldValue(value)) throw headerError('invalid-syntax');
    this.#entries.push([name, value.slice()]);
  }

  entries(): FieldEntry[] {
    return this.#entries.map(([name, value]) => [name, value.slice()]);
  }

  clone(): Fields {
    const copy = new Fields();
    copy.#entries = this.entries();
    return copy;
  }

  #checkWritable(name: string): void {
    if (this.#immutable) throw headerError('immutable');
    if (!TOKEN.test(name)) throw headerError('invalid-syntax');
    if (FORBIDDEN_HEADERS.has(name.toLowerCase())) throw headerError('forbidden');
  }

  #remove(name: string): void {
    const key = name.toLowerCase();
    this.#entries = this.#entries.filter(([entry]) => entry.toLowerCase() !== key);
  }
}

/** Immutable fields holding a copy of `entries` (a request's or response's own headers). */
export function lockedFields(entries: readonly FieldEntry[]): Fields {
  return lockedFieldsOf(entries);
}

/** The entries of `fields`, not copied (the host side reading what the guest built). */
export function fieldsEntries(fields: Fields): readonly FieldEntry[] {
  return entriesOf(fields);
}
