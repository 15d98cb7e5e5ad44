/**
 * The host's TypeScript sources and their syntax trees, for the tests that check the code's shape: the import
 * graph, the transport wall and the call plan. Parsed with rolldown's parser (oxc, native code; rolldown is one of
 * toolhost's dependencies): loading TypeScript's compiler cost each test process ~0.5 s of CPU, and its parser
 * ~0.9 s per pass over host/, where this takes ~0.25 s. Each file is parsed once per test process.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAst } from 'rolldown/parseAst';
import { root } from './helpers.js';

export const hostDir = join(root, 'host');

/** A node of an ESTree syntax tree (with TypeScript's nodes): its type, its offsets and its fields. */
export interface SyntaxNode {
  type: string;
  start: number;
  end: number;
  [field: string]: unknown;
}

export interface ParsedSource {
  file: string;
  text: string;
  program: SyntaxNode;
  /** The 1-based line of an offset into `text`. */
  lineOf(offset: number): number;
}

/** Every TypeScript source under `dir` (.ts, .cts, .mts; no declaration files). */
export function hostSourceFiles(dir = hostDir): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return hostSourceFiles(path);
    return /\.(c|m)?ts$/.test(entry.name) && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

const parsed = new Map<string, ParsedSource>();

/** The syntax tree of `file` (of `text` instead, when given: not remembered). A file that does not parse throws. */
export function parseSource(file: string, text?: string): ParsedSource {
  const known = text === undefined ? parsed.get(file) : undefined;
  if (known) return known;
  const source = text ?? readFileSync(file, 'utf8');
  const result = parseAst(source, { lang: 'ts' }, file) as unknown as SyntaxNode;
  const lineStarts = [0];
  for (let at = source.indexOf('\n'); at !== -1; at = source.indexOf('\n', at + 1)) lineStarts.push(at + 1);
  const lineOf = (offset: number): number => {
    let low = 0;
    let high = lineStarts.length - 1;
    while (low < high) {
      const middle = (low + high + 1) >> 1;
      if (lineStarts[middle]! <= offset) low = middle;
      else high = middle - 1;
    }
    return low + 1;
  };
  const entry: ParsedSource = { file, text: source, program: result, lineOf };
  if (text === undefined) parsed.set(file, entry);
  return entry;
}

function isNode(value: unknown): value is SyntaxNode {
  return typeof value === 'object' && value !== null && typeof (value as { type?: unknown }).type === 'string';
}

/** Calls `visit` on `node` and every node below it, parents first; `visit` returning false skips a node's children. */
export function walk(node: SyntaxNode, visit: (node: SyntaxNode) => boolean | void): void {
  if (visit(node) === false) return;
  for (const key in node) {
    const value = node[key];
    if (Array.isArray(value)) {
      for (const item of value) if (isNode(item)) walk(item, visit);
    } else if (isNode(value)) {
      walk(value, visit);
    }
  }
}

/** A string literal's text, or undefined for anything else. */
export function literalText(node: unknown): string | undefined {
  return isNode(node) && node.type === 'Literal' && typeof node.value === 'string' ? node.value : undefined;
}

/** An identifier's name, or undefined for anything else. */
export function identifierName(node: unknown): string | undefined {
  return isNode(node) && node.type === 'Identifier' && typeof node.name === 'string' ? node.name : undefined;
}

/**
 * Every module a source names, as written: import and export declarations (type-only ones too), `import()`,
 * `require()`, `import x = require()` and `import('...')` in types.
 */
export function moduleSpecifiers(source: ParsedSource): string[] {
  const found: string[] = [];
  walk(source.program, (node) => {
    let specifier: string | undefined;
    switch (node.type) {
      case 'ImportDeclaration':
      case 'ExportNamedDeclaration':
      case 'ExportAllDeclaration':
      case 'ImportExpression':
      case 'TSImportType':
        specifier = literalText(node.source);
        break;
      case 'TSExternalModuleReference':
        specifier = literalText(node.expression);
        break;
      case 'CallExpression':
        if (identifierName(node.callee) === 'require') specifier = literalText((node.arguments as unknown[])[0]);
        break;
    }
    if (specifier !== undefined) found.push(specifier);
  });
  return found;
}
