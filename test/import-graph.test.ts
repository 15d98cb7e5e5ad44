/**
 * The layering holds: no import cycle among the host's files, no arrow from a
 * lower layer up into a higher one, and no file over 400 lines unless its
 * header says why ("(Over 400 lines: ...)"). Read from the sources' syntax
 * trees (test/host-sources.ts), type-only and dynamic imports included.
 */
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { hostDir, hostSourceFiles, moduleSpecifiers, parseSource } from './host-sources.js';

const files = hostSourceFiles();
const known = new Set(files);

/** A relative import's target file (`./x.js` is written for `./x.ts`). */
function target(from: string, specifier: string): string | undefined {
  if (!specifier.startsWith('.')) return undefined;
  const base = resolve(dirname(from), specifier);
  for (const candidate of [base.replace(/\.js$/, '.ts'), base.replace(/\.cjs$/, '.cts'), base.replace(/\.mjs$/, '.mts'), base]) {
    if (known.has(candidate)) return candidate;
  }
  return undefined;
}

const graph = new Map<string, string[]>(files.map((file) => {
  const targets = moduleSpecifiers(parseSource(file)).map((specifier) => target(file, specifier)).filter((path): path is string => path !== undefined);
  return [file, [...new Set(targets)]];
}));

const rel = (file: string): string => relative(hostDir, file);
const layerOf = (file: string): string => rel(file).split('/')[0]!.replace(/\.(c|m)?ts$/, '');

/** Strongly connected components with more than one file (or a file importing itself): Tarjan's algorithm. */
function cycles(): string[][] {
  let index = 0;
  const stack: string[] = [];
  const onStack = new Set<string>();
  const indices = new Map<string, number>();
  const low = new Map<string, number>();
  const found: string[][] = [];
  const visit = (node: string): void => {
    indices.set(node, index);
    low.set(node, index);
    index += 1;
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!indices.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node)!, indices.get(next)!));
      }
    }
    if (low.get(node) === indices.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(rel(member));
      } while (member !== node);
      if (component.length > 1 || (graph.get(node) ?? []).includes(node)) found.push(component.sort());
    }
  };
  for (const file of files) if (!indices.has(file)) visit(file);
  return found;
}

/**
 * The folders a folder may import, lowest first: every folder of host/ has a
 * rule (a new folder fails until it gets one), and the rules form no loop, so
 * no arrow can run back up. `base` holds what everything needs (errors, the
 * logger); `core` knows nothing of Wasm, MCP, gRPC or the config file;
 * `policy` decides and never touches the network or the sandbox; `tools` are
 * the tools the host ships; adapters (`servers`) never assemble the host;
 * nothing but the CLI and the public entry points import `compose`'s callers.
 */
const ALLOWED: Record<string, readonly string[]> = {
  types: [],
  base: [],
  policy: ['base'],
  net: ['base', 'policy'],
  core: ['base', 'policy'],
  // The fleet implements core's interfaces on Redis; the composition root wires it in.
  fleet: ['base', 'core'],
  tools: ['base', 'core', 'net', 'policy'],
  sandbox: ['base', 'core', 'net', 'policy'],
  distribution: ['base', 'net'],
  config: ['base', 'core', 'net', 'policy', 'sandbox', 'distribution'],
  servers: ['base', 'core', 'net', 'policy', 'tools'],
  authoring: ['base', 'config', 'sandbox'],
  // OpenTelemetry (settings from env and file, the SDK behind core's narrow tracer): loaded by the composition root.
  telemetry: ['base', 'core'],
  compose: ['base', 'config', 'core', 'distribution', 'fleet', 'net', 'policy', 'sandbox', 'servers', 'telemetry', 'tools'],
  bench: ['authoring', 'base', 'compose', 'config', 'core', 'distribution', 'net', 'policy', 'sandbox', 'servers', 'tools'],
  cli: ['authoring', 'base', 'bench', 'compose', 'config', 'core', 'distribution', 'fleet', 'net', 'policy', 'sandbox', 'servers', 'telemetry', 'tools'],
  // The public entry points (index.ts, runner.ts) hand on what embedders use.
  index: ['authoring', 'base', 'compose', 'config', 'core', 'distribution', 'net', 'policy', 'sandbox', 'servers', 'tools'],
  runner: ['base', 'compose', 'core', 'net', 'policy', 'sandbox', 'tools'],
};

describe('the import graph of host/', () => {
  it('reads every source file', () => {
    expect(files.length).toBeGreaterThan(50);
    expect(graph.get(join(hostDir, 'compose', 'host.ts'))?.map(rel)).toEqual(expect.arrayContaining(['compose/registry.ts']));
  });

  it('has no import cycle', () => {
    expect(cycles()).toEqual([]);
  });

  it('gives every folder a rule, and the rules no loop', () => {
    expect([...new Set(files.map(layerOf))].filter((layer) => ALLOWED[layer] === undefined)).toEqual([]);
    const rank = new Map<string, number>();
    const rankOf = (layer: string, seen: readonly string[] = []): number => {
      if (seen.includes(layer)) throw new Error(`the rules loop: ${[...seen, layer].join(' -> ')}`);
      const known = rank.get(layer);
      if (known !== undefined) return known;
      const value = 1 + Math.max(0, ...(ALLOWED[layer] ?? []).map((below) => rankOf(below, [...seen, layer])));
      rank.set(layer, value);
      return value;
    };
    for (const layer of Object.keys(ALLOWED)) rankOf(layer);
  });

  it('has no arrow from a lower layer up into a higher one, or sideways without a rule', () => {
    const outside: string[] = [];
    for (const [file, targets] of graph) {
      const from = layerOf(file);
      for (const imported of targets) {
        const to = layerOf(imported);
        if (to !== from && !(ALLOWED[from] ?? []).includes(to)) outside.push(`${rel(file)} -> ${rel(imported)}`);
      }
    }
    expect(outside).toEqual([]);
  });

  it('has no file over 400 lines without a reason in its header', () => {
    const long = files
      .map((file) => ({ file: rel(file), text: parseSource(file).text }))
      .filter(({ text }) => text.split('\n').length > 400)
      .filter(({ text }) => !/\(Over 400 lines: [^)]+\)/.test(text.slice(0, 3000)))
      .map(({ file }) => file);
    expect(long).toEqual([]);
  });
});
