/**
 * A config file's text parsed as YAML, keeping where every node is, so a
 * problem found in the data (by ajv or by a semantic check) can be reported
 * at its line and column.
 */
import { LineCounter, isAlias, isMap, isScalar, isSeq, parseDocument, type Document, type Node } from 'yaml';
import { ConfigError, type ConfigProblem } from './errors.js';

/** A path into the document: mapping keys and list indexes. */
export type ConfigPath = ReadonlyArray<string | number>;

/** Which part of a mapping entry a problem points at: its value (default) or its key. */
export type Anchor = 'value' | 'key';

/** Most aliases a document may expand (a guard against "billion laughs" documents). */
const MAX_ALIAS_COUNT = 100;

/** Format a path as written: `tools[0].grant.env["A-B"]`; empty for the root. */
export function formatPath(path: ConfigPath): string {
  let text = '';
  for (const segment of path) {
    if (typeof segment === 'number') text += `[${segment}]`;
    else if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(segment)) text += text === '' ? segment : `.${segment}`;
    else text += `[${JSON.stringify(segment)}]`;
  }
  return text;
}

/** A parsed config file: its data and the positions of its nodes. */
export class ConfigSource {
  /** The file's absolute path. */
  readonly file: string;
  /** The file as shown in messages. */
  readonly display: string;
  /** The document as plain data (what the schema validates). */
  readonly data: unknown;
  readonly #doc: Document.Parsed;
  readonly #lines: LineCounter;

  private constructor(file: string, display: string, doc: Document.Parsed, lines: LineCounter, data: unknown) {
    this.file = file;
    this.display = display;
    this.#doc = doc;
    this.#lines = lines;
    this.data = data;
  }

  /**
   * Parse YAML text. A syntax error (or a duplicate key) throws a
   * {@link ConfigError} at its line and column.
   *
   * @param text the file's contents
   * @param file the file's absolute path
   * @param display the file as shown in messages
   */
  static parse(text: string, file: string, display: string): ConfigSource {
    const lines = new LineCounter();
    const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true, strict: true });
    if (doc.errors.length > 0) {
      const problems = doc.errors.map((error): ConfigProblem => {
        const { line, col } = lines.linePos(error.pos[0]);
        return { line, column: col, path: '', message: `YAML syntax error: ${error.message}` };
      });
      throw ConfigError.fromProblems(file, display, problems);
    }
    let data: unknown;
    try {
      data = doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
    } catch (error) {
      throw ConfigError.fromProblems(file, display, [{ line: 1, column: 1, path: '', message: `YAML error: ${(error as Error).message}` }]);
    }
    // An empty file (or one holding only comments) is an empty mapping: every default.
    return new ConfigSource(file, display, doc, lines, data ?? {});
  }

  /**
   * The position of the node at `path`: its value, or with `anchor: 'key'` the
   * key of its mapping entry. Where the path leads past the document (a key
   * that is absent), the deepest node found is used.
   */
  locate(path: ConfigPath, anchor: Anchor = 'value'): { line: number; column: number } {
    let node: unknown = this.#doc.contents;
    let best = this.#start(node) ?? 0;
    for (let i = 0; i < path.length; i += 1) {
      const segment = path[i];
      const container = this.#deref(node);
      let key: unknown;
      if (isMap(container)) {
        const pair = container.items.find((item) => isScalar(item.key) && String(item.key.value) === String(segment));
        if (!pair) break;
        key = pair.key;
        node = pair.value;
      } else if (isSeq(container) && typeof segment === 'number') {
        node = container.items[segment];
        if (node === undefined) break;
      } else {
        break;
      }
      const last = i === path.length - 1;
      const keyStart = this.#start(key);
      const valueStart = this.#start(node);
      best = (last && anchor === 'key' ? keyStart ?? valueStart : valueStart ?? keyStart) ?? best;
    }
    const { line, col } = this.#lines.linePos(best);
    return { line, column: col };
  }

  /** A problem at `path` (see {@link locate}). */
  problem(path: ConfigPath, message: string, anchor: Anchor = 'value'): ConfigProblem {
    return { ...this.locate(path, anchor), path: formatPath(path), message };
  }

  #deref(node: unknown): unknown {
    return isAlias(node) ? node.resolve(this.#doc) : node;
  }

  #start(node: unknown): number | undefined {
    if (node === null || typeof node !== 'object') return undefined;
    // A scalar with no text (`key:`) has an empty range: still a valid position.
    const range = (node as Node).range;
    return range ? range[0] : undefined;
  }
}
