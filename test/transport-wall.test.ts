/**
 * The wall around the sandbox's transport: only files in host/sandbox/transport/ know how a message travels between
 * the main thread and a worker. Read on the syntax trees of every file in host/ (test/host-sources.ts): outside that
 * folder no file posts a message (`.postMessage(`), reads a port synchronously (`receiveMessageOnPort`), makes a
 * channel (`new MessageChannel`, or imports it), or imports or constructs the shared-memory rings (shared-ring,
 * task-ring, answer-ring). The schema lane (host/core/schema-lane.ts and its worker) is not a sandbox worker: a
 * thread of its own for imported tools' schemas, with its own two-message protocol, so it is outside the wall.
 */
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { hostDir, hostSourceFiles, identifierName, literalText, parseSource, walk, type SyntaxNode } from './host-sources.js';

const transportDir = join(hostDir, 'sandbox', 'transport');
/** Files that talk to a worker that is not a sandbox worker (see the header). */
const OTHER_WORKERS = new Set(['schema-lane.ts', 'schema-lane-worker.ts'].map((name) => join(hostDir, 'core', name)));
const RINGS = new Set(['shared-ring', 'task-ring', 'answer-ring'].map((name) => join(transportDir, `${name}.ts`)));
const RING_CLASSES = new Set(['SharedRing', 'TaskRing', 'AnswerRing']);
const PORT_NAMES = new Set(['MessageChannel', 'receiveMessageOnPort']);

/** The name a callee or constructor is reached by: `name` or `something.name` (undefined for anything else). */
function calleeName(callee: unknown): string | undefined {
  const node = callee as SyntaxNode | undefined;
  if (node?.type === 'MemberExpression' && node.computed !== true) return identifierName(node.property);
  return identifierName(node);
}

/** What `file` does that only the transport may do, as "line: what". */
function transportUses(file: string, text?: string): string[] {
  const source = parseSource(file, text);
  const found: string[] = [];
  const at = (node: SyntaxNode, what: string): void => {
    found.push(`${source.lineOf(node.start)}: ${what}`);
  };
  walk(source.program, (node) => {
    if (node.type === 'ImportDeclaration' || node.type === 'ExportNamedDeclaration' || node.type === 'ExportAllDeclaration') {
      const specifier = literalText(node.source);
      if (specifier === undefined) return;
      if (specifier.startsWith('.') && RINGS.has(resolve(dirname(file), specifier).replace(/\.js$/, '.ts'))) at(node, `imports ${specifier}`);
      if (node.type !== 'ImportDeclaration' || !/worker_threads$/.test(specifier)) return;
      for (const element of node.specifiers as SyntaxNode[]) {
        const name = element.type === 'ImportSpecifier' ? identifierName(element.imported) ?? literalText(element.imported) : undefined;
        if (name !== undefined && PORT_NAMES.has(name)) at(element, `imports ${name}`);
      }
    }
    if (node.type === 'CallExpression') {
      const name = calleeName(node.callee);
      const member = (node.callee as SyntaxNode).type === 'MemberExpression';
      if (member && name === 'postMessage') at(node, 'calls postMessage');
      if (name === 'receiveMessageOnPort') at(node, 'calls receiveMessageOnPort');
    }
    if (node.type === 'NewExpression') {
      const name = calleeName(node.callee) ?? '';
      if (name === 'MessageChannel' || RING_CLASSES.has(name)) at(node, `constructs ${name}`);
    }
  });
  return found;
}

describe('the transport wall', () => {
  it('only host/sandbox/transport/ posts messages, makes channels, reads ports, or touches the rings', () => {
    const outside = hostSourceFiles().filter((file) => !file.startsWith(transportDir + '/') && !OTHER_WORKERS.has(file));
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
