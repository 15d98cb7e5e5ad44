/**
 * The file descriptors server reflection serves, as the `.proto` files really are.
 *
 * @grpc/proto-loader hands reflection one FileDescriptorProto per *package*, named after it (`sw4rm_tool.proto`,
 * `google_protobuf.proto`) and declaring no imports. Lenient clients (grpcurl) cope; strict ones (Python's
 * descriptor pool, protoc-based tools) refuse them: "google.protobuf.Duration seems to be defined in
 * google_protobuf.proto, which is not imported by sw4rm_tool.proto". This module rewrites them, at the protobuf
 * wire level (no protobufjs import of our own):
 *
 *  - each top-level message, enum and service goes to the file that declares it: a package's file from
 *    `packageFiles` (e.g. `sw4rm.tool` → `sw4rm/tool.proto`), a google.protobuf well-known type to its real
 *    file (`google/protobuf/duration.proto`, `google/protobuf/struct.proto` for Struct, Value, …);
 *  - every type reference (field types, extendees, method input and output types) is fully qualified
 *    (`.google.protobuf.Duration`, as protoc writes it; proto-loader writes names relative to their scope);
 *  - each file's `dependency` lists the files whose types it uses, itself excluded; everything else in the
 *    descriptor (package, options, syntax) is kept as it was.
 *
 * Guaranteed: every type a served file refers to is defined in it or in a file it imports, and every file it
 * imports is served. Not guaranteed: source info and comments (proto-loader never had them); a package missing
 * from `packageFiles` keeps proto-loader's name (still with correct imports).
 */

/** Real file names of the google.protobuf well-known types (the ones not in a file of their own name). */
const WELL_KNOWN_FILES: Readonly<Record<string, string>> = {
  Struct: 'struct', Value: 'struct', ListValue: 'struct', NullValue: 'struct',
  DoubleValue: 'wrappers', FloatValue: 'wrappers', Int64Value: 'wrappers', UInt64Value: 'wrappers', Int32Value: 'wrappers',
  UInt32Value: 'wrappers', BoolValue: 'wrappers', StringValue: 'wrappers', BytesValue: 'wrappers',
  FieldMask: 'field_mask', SourceContext: 'source_context',
  Type: 'type', Field: 'type', Enum: 'type', EnumValue: 'type', Option: 'type', Syntax: 'type',
  Api: 'api', Method: 'api', Mixin: 'api',
};

function wellKnownFile(name: string): string {
  const base = WELL_KNOWN_FILES[name] ?? name.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase();
  return `google/protobuf/${base}.proto`;
}

// --- protobuf wire format: just enough to walk descriptors and write them back ---

interface WireField {
  no: number;
  wire: number;
  /** The whole field, tag included, as encoded. */
  raw: Uint8Array;
  /** A length-delimited field's payload. */
  data?: Uint8Array;
}

function readVarint(buf: Uint8Array, at: number): [number, number] {
  let value = 0;
  let shift = 0;
  for (let pos = at; pos < buf.length; pos += 1) {
    const byte = buf[pos]!;
    value += (byte & 0x7f) * 2 ** shift;
    if ((byte & 0x80) === 0) return [value, pos + 1];
    shift += 7;
    if (shift > 63) break;
  }
  throw new Error('malformed descriptor: bad varint');
}

function parseFields(buf: Uint8Array): WireField[] {
  const fields: WireField[] = [];
  let pos = 0;
  while (pos < buf.length) {
    const start = pos;
    const [tag, afterTag] = readVarint(buf, pos);
    const no = Math.floor(tag / 8);
    const wire = tag & 7;
    pos = afterTag;
    let data: Uint8Array | undefined;
    if (wire === 0) [, pos] = readVarint(buf, pos);
    else if (wire === 1) pos += 8;
    else if (wire === 5) pos += 4;
    else if (wire === 2) {
      const [length, afterLength] = readVarint(buf, pos);
      data = buf.subarray(afterLength, afterLength + length);
      pos = afterLength + length;
    } else throw new Error(`malformed descriptor: wire type ${wire}`);
    if (pos > buf.length) throw new Error('malformed descriptor: truncated');
    fields.push({ no, wire, raw: buf.subarray(start, pos), ...(data === undefined ? {} : { data }) });
  }
  return fields;
}

function varint(value: number): number[] {
  const out: number[] = [];
  let rest = value;
  while (rest >= 0x80) {
    out.push((rest % 0x80) | 0x80);
    rest = Math.floor(rest / 0x80);
  }
  out.push(rest);
  return out;
}

function lengthField(no: number, payload: Uint8Array): Uint8Array {
  const head = [...varint(no * 8 + 2), ...varint(payload.length)];
  const out = new Uint8Array(head.length + payload.length);
  out.set(head, 0);
  out.set(payload, head.length);
  return out;
}

const text = new TextDecoder();
const stringOf = (fields: WireField[], no: number): string | undefined => {
  const field = fields.find((entry) => entry.no === no && entry.data !== undefined);
  return field?.data === undefined ? undefined : text.decode(field.data);
};
const stringField = (no: number, value: string): Uint8Array => lengthField(no, new TextEncoder().encode(value));

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

// FileDescriptorProto: name 1, package 2, dependency 3, message_type 4, enum_type 5, service 6,
// public_dependency 10, weak_dependency 11. DescriptorProto: name 1, field 2, nested_type 3, extension 6.
// FieldDescriptorProto: type_name 6. ServiceDescriptorProto: method 2. MethodDescriptorProto: input 2, output 3.
const FILE = { name: 1, package: 2, dependency: 3, message: 4, enum: 5, service: 6, publicDependency: 10, weakDependency: 11 } as const;

/** Every message and enum a message declares, nested ones included, by full name (`.pkg.Outer.Inner`). */
function collectSymbols(message: Uint8Array, scope: string, into: Set<string>): void {
  const name = `${scope}.${stringOf(parseFields(message), 1) ?? ''}`;
  into.add(name);
  for (const field of parseFields(message)) {
    if (field.no === 3 && field.data) collectSymbols(field.data, name, into);
    else if (field.no === 4 && field.data) into.add(`${name}.${stringOf(parseFields(field.data), 1) ?? ''}`);
  }
}

/**
 * The fully qualified name (`.pkg.Msg`) a type reference means from `scope`, by protobuf's rules: a name with a
 * leading dot is already one; otherwise the innermost enclosing scope where it names a known type wins.
 * proto-loader writes short names (`ToolCall`, `google.protobuf.Duration`); strict clients want full ones.
 */
function qualify(ref: string, scope: string, symbols: ReadonlySet<string>): string {
  if (ref.startsWith('.')) return ref;
  for (let at = scope; ; at = at.slice(0, Math.max(0, at.lastIndexOf('.')))) {
    const candidate = `${at}.${ref}`;
    if (symbols.has(candidate)) return candidate;
    if (at === '') return `.${ref}`;
  }
}

/** Rewrite the string fields `names` of a message (a field or a method descriptor) to full type names. */
function qualifyFields(payload: Uint8Array, names: readonly number[], scope: string, symbols: ReadonlySet<string>, refs: Set<string>): Uint8Array {
  return concat(parseFields(payload).map((field) => {
    if (!names.includes(field.no) || !field.data) return field.raw;
    const full = qualify(text.decode(field.data), scope, symbols);
    refs.add(full);
    return stringField(field.no, full);
  }));
}

/** A DescriptorProto with every field's type_name (6) and extendee (2) fully qualified; its references go to `refs`. */
function qualifyMessage(message: Uint8Array, scope: string, symbols: ReadonlySet<string>, refs: Set<string>): Uint8Array {
  const name = `${scope}.${stringOf(parseFields(message), 1) ?? ''}`;
  return concat(parseFields(message).map((field) => {
    if (!field.data) return field.raw;
    if (field.no === 2 || field.no === 6) return lengthField(field.no, qualifyFields(field.data, [2, 6], name, symbols, refs));
    if (field.no === 3) return lengthField(3, qualifyMessage(field.data, name, symbols, refs));
    return field.raw;
  }));
}

/** A ServiceDescriptorProto with every method's input (2) and output (3) type fully qualified. */
function qualifyService(service: Uint8Array, scope: string, symbols: ReadonlySet<string>, refs: Set<string>): Uint8Array {
  return concat(parseFields(service).map((field) => (field.no === 2 && field.data ? lengthField(2, qualifyFields(field.data, [2, 3], scope, symbols, refs)) : field.raw)));
}

interface TopLevel {
  field: WireField;
  fullName: string;
  file: string;
}

/**
 * Rewrite `descriptors` (encoded FileDescriptorProtos, one per package, as proto-loader makes them) into one per
 * real `.proto` file with its imports. `packageFiles` names each package's file (`sw4rm.tool` → `sw4rm/tool.proto`).
 */
export function realFileDescriptors(descriptors: readonly Uint8Array[], packageFiles: Readonly<Record<string, string>>): Buffer[] {
  const topLevel: TopLevel[] = [];
  const fileFields = new Map<string, { pkg: string; rest: WireField[] }>();
  const seen = new Set<string>();
  for (const descriptor of descriptors) {
    const fields = parseFields(descriptor);
    const original = stringOf(fields, FILE.name) ?? '';
    if (seen.has(original)) continue;
    seen.add(original);
    const pkg = stringOf(fields, FILE.package) ?? '';
    for (const field of fields) {
      if ((field.no !== FILE.message && field.no !== FILE.enum && field.no !== FILE.service) || !field.data) continue;
      const name = stringOf(parseFields(field.data), 1) ?? '';
      const file = pkg === 'google.protobuf' ? wellKnownFile(name) : packageFiles[pkg] ?? original;
      topLevel.push({ field, fullName: `.${pkg === '' ? '' : `${pkg}.`}${name}`, file });
      // The fields every file of this package keeps (options, syntax…), taken from its first descriptor.
      if (!fileFields.has(file)) {
        const kept = [FILE.name, FILE.dependency, FILE.message, FILE.enum, FILE.service, FILE.publicDependency, FILE.weakDependency] as number[];
        fileFields.set(file, { pkg, rest: fields.filter((entry) => !kept.includes(entry.no)) });
      }
    }
  }
  const fileOfSymbol = new Map(topLevel.map((entry) => [entry.fullName, entry.file]));
  const symbols = new Set<string>(topLevel.map((entry) => entry.fullName));
  for (const entry of topLevel) {
    if (entry.field.no === FILE.message) collectSymbols(entry.field.data!, entry.fullName.slice(0, entry.fullName.lastIndexOf('.')), symbols);
  }
  const fileOf = (typeName: string): string | undefined => {
    // `.pkg.Outer.Inner` is in Outer's file: try the longest known prefix.
    for (let name = typeName; name.includes('.'); name = name.slice(0, name.lastIndexOf('.'))) {
      const file = fileOfSymbol.get(name);
      if (file !== undefined) return file;
    }
    return undefined;
  };
  const out: Buffer[] = [];
  for (const [file, { pkg, rest }] of fileFields) {
    const mine = topLevel.filter((entry) => entry.file === file);
    const refs = new Set<string>();
    const scope = pkg === '' ? '' : `.${pkg}`;
    const body = new Map<TopLevel, Uint8Array>();
    for (const entry of mine) {
      if (entry.field.no === FILE.message) body.set(entry, lengthField(FILE.message, qualifyMessage(entry.field.data!, scope, symbols, refs)));
      else if (entry.field.no === FILE.service) body.set(entry, lengthField(FILE.service, qualifyService(entry.field.data!, scope, symbols, refs)));
      else body.set(entry, entry.field.raw);
    }
    const dependencies = [...new Set([...refs].map(fileOf).filter((dep): dep is string => dep !== undefined && dep !== file))].sort();
    const parts: Uint8Array[] = [stringField(FILE.name, file)];
    if (pkg !== '') parts.push(stringField(FILE.package, pkg));
    for (const dependency of dependencies) parts.push(stringField(FILE.dependency, dependency));
    // Messages, then enums, then services, each in their original order; then the rest as it was.
    for (const no of [FILE.message, FILE.enum, FILE.service]) parts.push(...mine.filter((entry) => entry.field.no === no).map((entry) => body.get(entry)!));
    parts.push(...rest.filter((entry) => entry.no !== FILE.package).map((entry) => entry.raw));
    out.push(Buffer.from(concat(parts)));
  }
  return out;
}

/** Every encoded FileDescriptorProto in `definitions` (proto-loader package definitions), each once. */
export function descriptorsOf(definitions: ReadonlyArray<Record<string, unknown>>): Uint8Array[] {
  const all = new Map<string, Uint8Array>();
  for (const definition of definitions) {
    for (const entry of Object.values(definition)) {
      const files = (entry as { fileDescriptorProtos?: unknown }).fileDescriptorProtos;
      if (!Array.isArray(files)) continue;
      for (const file of files as Uint8Array[]) all.set(Buffer.from(file).toString('base64'), file);
    }
  }
  return [...all.values()];
}
