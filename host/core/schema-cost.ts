/**
 * What a JSON Schema may cost the main thread, decided at registration.
 *
 * Guarantees: `analyseSchema` walks a schema iteratively (a schema or a `$ref` chain of any depth cannot
 * overflow its stack), follows each object once (a DAG of shared objects or `$ref`s costs its size, not
 * its expansion), and refuses, with a `SchemaTooCostly` naming the limit:
 * - a document of more than `nodes` values (every object counted each time it occurs, as ajv compiles it)
 *   or deeper than `depth` levels, or one that contains itself (a JS object cycle);
 * - a `$ref` that is not a JSON pointer into the schema itself (`#`, `#/definitions/x`), an `$id` below the
 *   root of a schema that uses `$ref` (it would change what a `#` pointer means), and a `$ref` cycle that
 *   applies a schema to the same value again without descending into it (`$ref: "#"`: validation never ends);
 * - more than `fanout` schema checks applying to one value of the args at any depth up to `argsDepth`, every
 *   `$ref` and combinator expanded (an `allOf`/`$ref` DAG of depth 30 is 2^30), an `enum` counting its values;
 * - an `enum` of more than `enumValues` values, patterns of more than `patternChars` characters in all, and a
 *   schema whose patterns' RE2 programs may exceed `patternProgram` instructions in all (`(a?){1000}`).
 * The answer, `perDepth`, bounds the checks per value at each depth: a call's validation cost is bounded by
 * its args (see `schema.ts`).
 *
 * Does not: check that the schema is valid (ajv's meta-schema check does, after this), or model a keyword's
 * exact semantics. It over-approximates (both `then` and `else` count, `patternProperties` and
 * `additionalProperties` both apply to every member), so it may refuse a schema that would have been cheap,
 * never the reverse, for the draft-07 keywords ajv runs by default.
 */
import { re2ProgramBound } from './pattern-cost.js';
import type { SchemaLimits } from './schema-limits.js';

/** A schema refused for its cost; `limit` names the limit (undefined: a `$ref` the host does not follow). */
export class SchemaTooCostly extends Error {
  constructor(readonly limit: keyof SchemaLimits | undefined, message: string) {
    super(message);
    this.name = 'SchemaTooCostly';
  }
}

export interface SchemaCost {
  /** `perDepth[k]`: the most schema checks that apply to one value k levels into the args (k = 0..argsDepth). */
  perDepth: Float64Array;
  /** Every object in a schema position (reached from the root, `$ref` targets, `definitions`). */
  schemaObjects: Array<Record<string, unknown>>;
}

/** One schema object's edges: where each of its subschemas applies. */
interface SchemaNode {
  weight: number;
  /** Applied to the same value (allOf, anyOf, oneOf, not, if/then/else, dependencies, $ref). */
  inPlace: number[];
  /** Applied to one element each (`items` as a tuple): at most one applies to an element. */
  tuple: number[];
  /** Applied to array elements (`items`, `additionalItems`, `contains`). */
  arr: number[];
  /** Applied to one member each (`properties`): at most one applies to a member. */
  props: number[];
  /** Applied to members or their names (`patternProperties`, `additionalProperties`, `propertyNames`). */
  obj: number[];
}

const IN_PLACE_ONE = ['not', 'if', 'then', 'else'] as const;
const IN_PLACE_LIST = ['allOf', 'anyOf', 'oneOf'] as const;
const IN_PLACE_MAP = ['dependencies', 'dependentSchemas'] as const;
const ARRAY_ONE = ['additionalItems', 'contains', 'unevaluatedItems'] as const;
const OBJECT_ONE = ['additionalProperties', 'propertyNames', 'unevaluatedProperties'] as const;
const DEFINITIONS = ['definitions', '$defs'] as const;

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const isSchema = (value: unknown): value is Record<string, unknown> | boolean => typeof value === 'boolean' || isObject(value);

/**
 * Measure `schema` against `limits`; throws `SchemaTooCostly` past one. Patterns are not compiled here:
 * their programs are bounded from their text (`re2ProgramBound`), so that compiling them (ajv's) is bounded.
 */
export function analyseSchema(schema: unknown, limits: SchemaLimits): SchemaCost {
  const sizes = measureDocument(schema, limits);
  const graph = new SchemaGraph(schema, sizes, limits);
  checkPatterns(graph.patterns, limits);
  return { perDepth: graph.fanout(limits), schemaObjects: graph.objects };
}

/**
 * Expanded size of every object in the document (memoised by identity), checking size, depth and cycles.
 * Iterative: a document nested 100,000 levels is refused at level `depth + 1`, not by a RangeError.
 */
function measureDocument(root: unknown, limits: SchemaLimits): Map<object, { size: number; height: number }> {
  const memo = new Map<object, { size: number; height: number }>();
  if (typeof root !== 'object' || root === null) return memo;
  interface Frame { value: object; children: unknown[]; next: number; size: number; height: number }
  const onPath = new Set<object>();
  const open = (value: object): Frame => {
    if (onPath.size >= limits.depth) throw new SchemaTooCostly('depth', `nests more than ${limits.depth} levels`);
    onPath.add(value);
    return { value, children: Array.isArray(value) ? value : Object.values(value), next: 0, size: 1, height: 1 };
  };
  const stack: Frame[] = [open(root)];
  let total = 1;
  while (stack.length > 0) {
    const frame = stack[stack.length - 1]!;
    if (frame.next < frame.children.length) {
      const child = frame.children[frame.next++];
      if (typeof child !== 'object' || child === null) {
        frame.size += 1;
        total += 1;
      } else if (onPath.has(child)) {
        throw new SchemaTooCostly('depth', 'contains itself (an object cycle)');
      } else {
        const known = memo.get(child);
        if (known === undefined) {
          stack.push(open(child));
          total += 1;
        } else {
          if (onPath.size + known.height > limits.depth) throw new SchemaTooCostly('depth', `nests more than ${limits.depth} levels`);
          frame.size += known.size;
          frame.height = Math.max(frame.height, known.height + 1);
          total += known.size;
        }
      }
      if (total > limits.nodes) throw new SchemaTooCostly('nodes', `has more than ${limits.nodes} values (every shared object counted where it occurs)`);
      continue;
    }
    stack.pop();
    onPath.delete(frame.value);
    memo.set(frame.value, { size: frame.size, height: frame.height });
    const parent = stack[stack.length - 1];
    if (parent) {
      parent.size += frame.size;
      parent.height = Math.max(parent.height, frame.height + 1);
    }
  }
  return memo;
}

/** The schema objects reachable from the root, numbered, with their edges. */
class SchemaGraph {
  readonly nodes: SchemaNode[] = [];
  readonly objects: Array<Record<string, unknown>> = [];
  readonly patterns: string[] = [];
  readonly #index = new Map<unknown, number>();
  readonly #root: unknown;
  readonly #pending: Array<Record<string, unknown>> = [];
  readonly #sizes: Map<object, { size: number }>;
  readonly #limits: SchemaLimits;
  #usesRef = false;
  #innerId = false;

  constructor(root: unknown, sizes: Map<object, { size: number }>, limits: SchemaLimits) {
    this.#root = root;
    this.#sizes = sizes;
    this.#limits = limits;
    this.#id(root);
    for (let next = this.#pending.pop(); next !== undefined; next = this.#pending.pop()) this.#read(next);
    if (this.#usesRef && this.#innerId) throw new SchemaTooCostly(undefined, 'uses $ref and an $id below its root (which would change what a "#" pointer means); put $id only at the root');
  }

  /** The node number of a schema (`true`/`false` are leaves of their own). */
  #id(schema: unknown): number {
    let id = this.#index.get(schema);
    if (id === undefined) {
      id = this.nodes.length;
      this.#index.set(schema, id);
      this.nodes.push({ weight: 1, inPlace: [], tuple: [], arr: [], props: [], obj: [] });
      if (isObject(schema)) {
        this.objects.push(schema);
        this.#pending.push(schema);
      }
    }
    return id;
  }

  #read(schema: Record<string, unknown>): void {
    const node = this.nodes[this.#index.get(schema)!]!;
    const add = (list: number[], value: unknown): void => {
      if (isSchema(value)) list.push(this.#id(value));
    };
    if (schema !== this.#root && (typeof schema.$id === 'string' || typeof schema.id === 'string')) this.#innerId = true;
    if (Array.isArray(schema.enum)) {
      if (schema.enum.length > this.#limits.enumValues) throw new SchemaTooCostly('enumValues', `has an enum of ${schema.enum.length} values (at most ${this.#limits.enumValues})`);
      node.weight += schema.enum.length;
    }
    if ('const' in schema) node.weight += typeof schema.const === 'object' && schema.const !== null ? (this.#sizes.get(schema.const)?.size ?? 1) : 1;
    if (typeof schema.pattern === 'string') this.patterns.push(schema.pattern);
    if (typeof schema.$ref === 'string') {
      this.#usesRef = true;
      node.inPlace.push(this.#id(this.#resolve(schema.$ref)));
    }
    for (const key of IN_PLACE_ONE) add(node.inPlace, schema[key]);
    for (const key of IN_PLACE_LIST) if (Array.isArray(schema[key])) for (const item of schema[key] as unknown[]) add(node.inPlace, item);
    for (const key of IN_PLACE_MAP) if (isObject(schema[key])) for (const value of Object.values(schema[key] as object)) add(node.inPlace, value);
    if (Array.isArray(schema.items)) for (const item of schema.items) add(node.tuple, item);
    else add(node.arr, schema.items);
    for (const key of ARRAY_ONE) add(node.arr, schema[key]);
    if (isObject(schema.properties)) for (const value of Object.values(schema.properties)) add(node.props, value);
    if (isObject(schema.patternProperties)) {
      for (const [pattern, value] of Object.entries(schema.patternProperties)) {
        this.patterns.push(pattern);
        add(node.obj, value);
      }
    }
    for (const key of OBJECT_ONE) add(node.obj, schema[key]);
    // Definitions apply only through a $ref, but are checked (and sanitised) like the rest.
    for (const key of DEFINITIONS) if (isObject(schema[key])) for (const value of Object.values(schema[key] as object)) if (isSchema(value)) this.#id(value);
  }

  /** The schema a local `$ref` points at. */
  #resolve(ref: string): unknown {
    if (!ref.startsWith('#')) throw new SchemaTooCostly(undefined, `has $ref ${JSON.stringify(ref.slice(0, 100))}: only pointers into the schema itself ("#", "#/definitions/...") are supported`);
    let target: unknown = this.#root;
    const pointer = ref.slice(1);
    if (pointer !== '') {
      if (!pointer.startsWith('/')) throw new SchemaTooCostly(undefined, `has $ref ${JSON.stringify(ref.slice(0, 100))}: anchors are not supported, use a JSON pointer`);
      for (const raw of pointer.slice(1).split('/')) {
        let segment: string;
        try {
          segment = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
        } catch {
          segment = raw;
        }
        target = typeof target === 'object' && target !== null && Object.hasOwn(target, segment) ? (target as Record<string, unknown>)[segment] : undefined;
      }
    }
    if (!isSchema(target)) throw new SchemaTooCostly(undefined, `has $ref ${JSON.stringify(ref.slice(0, 100))}, which does not point at a schema in it`);
    return target;
  }

  /** In-place edges, children before parents; a cycle of them is refused. */
  #order(): number[] {
    const state = new Uint8Array(this.nodes.length); // 0 new, 1 open, 2 done
    const order: number[] = [];
    for (let start = 0; start < this.nodes.length; start++) {
      if (state[start] !== 0) continue;
      const stack: Array<[number, number]> = [[start, 0]];
      state[start] = 1;
      while (stack.length > 0) {
        const top = stack[stack.length - 1]!;
        const edges = this.nodes[top[0]]!.inPlace;
        if (top[1] < edges.length) {
          const next = edges[top[1]++]!;
          if (state[next] === 1) throw new SchemaTooCostly('fanout', 'has a $ref cycle that applies a schema to the same value again ($ref: "#", or allOf/anyOf/oneOf/not through a $ref): its validation would never end');
          if (state[next] === 0) {
            state[next] = 1;
            stack.push([next, 0]);
          }
        } else {
          state[top[0]] = 2;
          order.push(top[0]);
          stack.pop();
        }
      }
    }
    return order;
  }

  /** The most checks applying to one value at each depth k ≤ argsDepth (see the header); throws past `fanout`. */
  fanout(limits: SchemaLimits): Float64Array {
    const order = this.#order();
    const count = this.nodes.length;
    const cap = limits.fanout + 1;
    const perDepth = new Float64Array(limits.argsDepth + 1);
    let previous = new Float64Array(count);
    let current = new Float64Array(count);
    const arr = new Float64Array(count);
    const obj = new Float64Array(count);
    const over = (depth: number): SchemaTooCostly => new SchemaTooCostly('fanout', `applies more than ${limits.fanout} schema checks to one value ${depth === 0 ? 'of the args' : `${depth} levels into the args`} (every $ref, allOf/anyOf/oneOf, if and not expanded; an enum counts its values)`);
    for (const id of order) {
      const node = this.nodes[id]!;
      let sum = node.weight;
      for (const child of node.inPlace) sum += current[child]!;
      current[id] = Math.min(sum, cap);
    }
    perDepth[0] = current[0]!;
    if (perDepth[0]! > limits.fanout) throw over(0);
    for (let depth = 1; depth <= limits.argsDepth; depth++) {
      [previous, current] = [current, previous];
      let changed = false;
      let any = false;
      for (const id of order) {
        const node = this.nodes[id]!;
        let ownArr = 0;
        for (const t of node.tuple) ownArr = Math.max(ownArr, previous[t]!);
        for (const t of node.arr) ownArr += previous[t]!;
        let ownObj = 0;
        for (const t of node.props) ownObj = Math.max(ownObj, previous[t]!);
        for (const t of node.obj) ownObj += previous[t]!;
        for (const child of node.inPlace) {
          ownArr += arr[child]!;
          ownObj += obj[child]!;
        }
        arr[id] = Math.min(ownArr, cap);
        obj[id] = Math.min(ownObj, cap);
        current[id] = Math.max(arr[id]!, obj[id]!);
        if (current[id] !== previous[id]) changed = true;
        if (current[id] !== 0) any = true;
      }
      perDepth[depth] = current[0]!;
      if (perDepth[depth]! > limits.fanout) throw over(depth);
      if (!any) break;
      if (!changed) {
        perDepth.fill(current[0]!, depth + 1);
        break;
      }
    }
    return perDepth;
  }
}

function checkPatterns(patterns: string[], limits: SchemaLimits): void {
  let chars = 0;
  for (const pattern of patterns) chars += pattern.length;
  if (chars > limits.patternChars) throw new SchemaTooCostly('patternChars', `has ${chars} characters of patterns (at most ${limits.patternChars})`);
  let program = 0;
  for (const pattern of new Set(patterns)) {
    program += re2ProgramBound(pattern);
    if (program > limits.patternProgram) {
      throw new SchemaTooCostly('patternProgram', `has patterns whose RE2 programs may have more than ${limits.patternProgram} instructions in all (at ${JSON.stringify(pattern.slice(0, 100))}; {n,m} repeats multiply a program)`);
    }
  }
}
