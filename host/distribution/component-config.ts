/**
 * What the CNCF Wasm OCI config says of a component (`component.exports`,
 * `component.imports`, `component.target`), read from the component's own
 * world as `jco`'s `componentWit` prints it: the interfaces it imports and
 * exports with their package versions (`toolhost:tool/host@0.2.0`,
 * `wasi:io/streams@0.2.3`), and the toolhost world it targets, named by the
 * version of the tool interface it exports (`toolhost:tool/tool-provider@0.2.0`;
 * `mcp-provider` when it also exports prompts or resources).
 *
 * Pure text work on the printed world (linear in its length). It describes;
 * nothing verifies or loads by it: the load path reads the component itself.
 */

/** The interfaces a component's world imports and exports, versioned, in its order. */
export interface ComponentInterfaces {
  imports: string[];
  exports: string[];
}

const ITEM = /^ {2}(import|export) ([a-z][a-z0-9-]*:[a-z0-9-]+(?:\/[a-z0-9-]+)+(?:@[0-9A-Za-z.+-]+)?);$/;

/** The named interfaces the first world of `wit` (componentWit's text) imports and exports. */
export function interfacesOfWit(wit: string): ComponentInterfaces {
  const found: ComponentInterfaces = { imports: [], exports: [] };
  const lines = wit.split('\n');
  const start = lines.findIndex((line) => /^world [\w-]+ \{$/.test(line));
  if (start < 0) return found;
  for (const line of lines.slice(start + 1)) {
    if (line === '}') break;
    const match = ITEM.exec(line);
    if (match === null) continue;
    (match[1] === 'import' ? found.imports : found.exports).push(match[2]!);
  }
  return found;
}

/**
 * The toolhost world a component with these exports targets: `toolhost:tool/tool-provider@V` for the version V of
 * the `toolhost:tool/tool` interface it exports (the newest, when several), `mcp-provider` when it also exports the
 * prompts or resources interface of that version; undefined when it exports no tool interface.
 */
export function targetWorld(exports: readonly string[]): string | undefined {
  const versions = exports.flatMap((name) => /^toolhost:tool\/tool@(.+)$/.exec(name)?.[1] ?? []).sort(compareVersions);
  const version = versions.at(-1);
  if (version === undefined) return undefined;
  const surface = exports.includes(`toolhost:tool/prompts@${version}`) || exports.includes(`toolhost:tool/resources@${version}`);
  return `toolhost:tool/${surface ? 'mcp-provider' : 'tool-provider'}@${version}`;
}

function compareVersions(a: string, b: string): number {
  const parts = (version: string): number[] => version.split(/[.+-]/).map((part) => Number.parseInt(part, 10) || 0);
  const [x, y] = [parts(a), parts(b)];
  for (let index = 0; index < Math.max(x.length, y.length); index += 1) {
    const difference = (x[index] ?? 0) - (y[index] ?? 0);
    if (difference !== 0) return difference;
  }
  return 0;
}
