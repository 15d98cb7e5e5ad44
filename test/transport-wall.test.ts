/**
 * The wall around the sandbox's transport: only files in host/sandbox/transport/ know how a message travels between
 * the main thread and a worker. Read on the syntax trees of every file in host/ (TypeScript's parser): outside that
 * folder no file posts a message (`.postMessage(`), reads a port synchronously (`receiveMessageOnPort`), makes a
 * channel (`new MessageChannel`, or imports it), or imports or constructs the shared-memory rings (shared-ring,
 * task-ring, answer-ring).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve, dirname } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { root } from './helpers.js';

const hostDir = join(root, 'host');
const transportDir = join(hostDir, 'sandbox', 'transport');
const RINGS = new Set(['shared-ring', 'task-ring', 'answer-ring'].map((name) => join(transportDir, `${name}.ts`)));
const RING_CLASSES = new Set(['SharedRing', 'TaskRing', 'AnswerRing']);
const PORT_NAMES = new Set(['MessageChannel', 'receiveMessageOnPort']);

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return /\.(c|m)?ts$/.test(entry.name) && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

/** What `file` does that only the transport may do, as "line: what". */
function transportUses(file: string, text = readFileSync(file, 'utf8')): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const at = (node: ts.Node, what: string): void => {
    found.push(`${source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1}: ${what}`);
  };
  const visit = (node: ts.Node): void => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      const specifier = node.moduleSpecifier.text;
      if (specifier.startsWith('.') && RINGS.has(resolve(dirname(file), specifier).replace(/\.js$/, '.ts'))) at(node, `imports ${specifier}`);
      const clause = ts.isImportDeclaration(node) ? node.importClause : undefined;
      const named = clause?.namedBindings && ts.isNamedImports(clause.namedBindings) ? clause.namedBindings.elements : [];
      for (const element of named) {
        const name = (element.propertyName ?? element.name).text;
        if (PORT_NAMES.has(name) && /worker_threads$/.test(specifier)) at(element, `imports ${name}`);
      }
    }
    if (ts.isCallExpression(node)) {
      const callee = node.expression;
      if (ts.isPropertyAccessExpression(callee) && callee.name.text === 'postMessage') at(node, 'calls postMessage');
      if ((ts.isIdentifier(callee) && callee.text === 'receiveMessageOnPort') || (ts.isPropertyAccessExpression(callee) && callee.name.text === 'receiveMessageOnPort')) at(node, 'calls receiveMessageOnPort');
    }
    if (ts.isNewExpression(node)) {
      const made = node.expression;
      const name = ts.isIdentifier(made) ? made.text : ts.isPropertyAccessExpression(made) ? made.name.text : '';
      if (name === 'MessageChannel' || RING_CLASSES.has(name)) at(node, `constructs ${name}`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe('the transport wall', () => {
  it('only host/sandbox/transport/ posts messages, makes channels, reads ports, or touches the rings', () => {
    const outside = sourceFiles(hostDir).filter((file) => !file.startsWith(transportDir + '/'));
    const breaches = outside.flatMap((file) => transportUses(file).map((use) => `${relative(hostDir, file)}:${use}`));
    expect(breaches).toEqual([]);
  });

  it('sees each of those uses, however written', () => {
    const file = join(hostDir, 'sandbox', 'worker', 'example.ts');
    const uses = transportUses(file, [
      "import { MessageChannel as Channel, receiveMessageOnPort, threadId } from 'node:worker_threads';",
      "import { TaskRing } from '../transport/task-ring.js';",
      "import type { AnswerRing } from '../transport/answer-ring.js';",
      "import { LANE_KICK } from '../transport/lane-codec.js';",
      'port.postMessage(1);',
      'parentPort?.postMessage(2);',
      'const c = new Channel();',
      'const w = new wt.MessageChannel();',
      'const r = new TaskRing(buffer);',
      'receiveMessageOnPort(port);',
      'port.post(3);',
    ].join('\n'));
    expect(uses).toEqual([
      '1: imports MessageChannel',
      '1: imports receiveMessageOnPort',
      "2: imports ../transport/task-ring.js",
      "3: imports ../transport/answer-ring.js",
      '5: calls postMessage',
      '6: calls postMessage',
      '8: constructs MessageChannel',
      '9: constructs TaskRing',
      '10: calls receiveMessageOnPort',
    ]);
  });
});
