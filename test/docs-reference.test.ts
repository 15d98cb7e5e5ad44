/**
 * The reference pages the README's map points at stay complete (issue 41 moved them out of the README): the CLI
 * reference (docs/cli.md) has a row for every command `toolhost --help` lists and names every option each command
 * takes (a bench flag may be named on docs/benchmarks.md, which the row links); the config reference
 * (docs/config.md) names every section of toolhost.schema.json and every key directly under one.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from './cli-runner.js';
import { root } from './helpers.js';

const doc = (name: string): string => readFileSync(join(root, 'docs', name), 'utf8');

/** The names a commander help text lists under its heading (`Commands:` or `Options:`). */
function helpEntries(help: string, heading: 'Commands:' | 'Options:'): string[] {
  const section = help.slice(help.indexOf(heading));
  return [...section.matchAll(heading === 'Commands:' ? /^ {2}([a-z][a-z-]*)\b/gm : /^ {2}(?:-\w, )?(--[a-z][a-z-]*)/gm)].map((match) => match[1]!);
}

describe('the CLI reference, docs/cli.md', () => {
  it('has a row for every command and names every option of each', async () => {
    const cli = doc('cli.md');
    const linked = `${cli}\n${doc('benchmarks.md')}`;
    const top = await runCli(['--help'], 30_000);
    const commands = helpEntries(top.stdout, 'Commands:').filter((name) => name !== 'help');
    expect(commands.length, 'toolhost --help lists its commands').toBeGreaterThanOrEqual(13);
    const missing: string[] = [];
    for (const command of commands) {
      if (!new RegExp(`^\\| \`toolhost ${command}\\b`, 'm').test(cli)) missing.push(`no row for toolhost ${command}`);
      const help = await runCli([command, '--help'], 30_000);
      for (const option of helpEntries(help.stdout, 'Options:')) {
        if (option === '--help') continue;
        const named = new RegExp(`${option}(?![\\w-])`);
        if (!named.test(command === 'bench' ? linked : cli)) missing.push(`toolhost ${command} ${option}`);
      }
    }
    expect(missing).toEqual([]);
  }, 120_000);
});

describe('the config reference, docs/config.md', () => {
  it('names every section of toolhost.schema.json and every key directly under one', () => {
    type Node = { $ref?: string; type?: string; items?: Node; properties?: Record<string, Node> };
    const schema = JSON.parse(readFileSync(join(root, 'toolhost.schema.json'), 'utf8')) as Node & Record<string, unknown>;
    const deref = (node: Node | undefined): Node | undefined => {
      if (node?.$ref === undefined) return node;
      return deref(node.$ref.split('/').slice(1).reduce<unknown>((at, key) => (at as Record<string, unknown>)[key], schema) as Node);
    };
    const config = doc('config.md');
    const missing: string[] = [];
    for (const [section, value] of Object.entries(schema.properties ?? {})) {
      if (!new RegExp(`\`${section}[\`.:]`).test(config)) missing.push(section);
      let node = deref(value);
      if (node?.type === 'array') node = deref(node.items);
      for (const key of Object.keys(node?.properties ?? {})) if (!new RegExp(`\\b${key}\\b`).test(config)) missing.push(`${section}.${key}`);
    }
    expect(Object.keys(schema.properties ?? {}).length).toBeGreaterThanOrEqual(10);
    expect(missing).toEqual([]);
  });
});
