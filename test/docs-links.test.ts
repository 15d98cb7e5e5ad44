/**
 * The README is the front door and docs/ holds the reference (issue 41): this keeps the way between them open.
 * Every relative link in README.md and docs/*.md names a file that exists, and an anchor (`page.md#section`,
 * `#section`) a heading of that page as GitHub slugs it; the commands the docs tell a user to run are the package's
 * scripts (authoring.md's, the scripts of the project `toolhost init` writes), and CI runs the README's test command
 * and every suite docs/testing.md lists.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { root } from './helpers.js';

const pages = ['README.md', ...readdirSync(join(root, 'docs')).filter((name) => name.endsWith('.md')).sort().map((name) => `docs/${name}`)];
const read = (page: string): string => readFileSync(join(root, page), 'utf8');

/** The text outside fenced code blocks (a `# comment` in a shell block is no heading, a `[x](y)` in code no link). */
function prose(markdown: string): string {
  return markdown.replace(/^( *)(```|~~~)[^\n]*\n[\s\S]*?^\1\2[^\n]*$/gm, '');
}

/** The fenced blocks of `language` (e.g. `sh`). */
function fenced(markdown: string, language: string): string[] {
  return [...markdown.matchAll(new RegExp(`^( *)\`\`\`${language}\\n([\\s\\S]*?)^\\1\`\`\``, 'gm'))].map((match) => match[2]!);
}

/** GitHub's anchors for a page's headings (github-slugger: lower case, punctuation dropped, spaces to '-', repeats numbered). */
function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const match of prose(markdown).matchAll(/^#{1,6} +(.+?) *#* *$/gm)) {
    const text = match[1]!.replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1');
    const base = text.toLowerCase().replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '').replace(/ /g, '-');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

/** The targets of a page's Markdown links and images, outside code. */
function linkTargets(markdown: string): string[] {
  const text = prose(markdown).replace(/`[^`\n]*`/g, '');
  return [...text.matchAll(/\]\(<?([^)\s>]+)>?(?:\s+"[^"]*")?\)/g)].map((match) => match[1]!);
}

describe('the links of README.md and docs/', () => {
  it('each relative link names an existing file inside the repository, and each anchor a heading of its page', () => {
    const broken: string[] = [];
    let checked = 0;
    for (const page of pages) {
      for (const target of linkTargets(read(page))) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:: not ours to check
        checked += 1;
        const [path, anchor] = target.split('#', 2) as [string, string | undefined];
        const file = path === '' ? join(root, page) : resolve(dirname(join(root, page)), decodeURIComponent(path));
        if (relative(root, file).startsWith('..')) {
          broken.push(`${page}: ${target} leaves the repository`);
          continue;
        }
        if (!existsSync(file)) {
          broken.push(`${page}: ${target} (no such file)`);
          continue;
        }
        if (anchor === undefined) continue;
        if (!file.endsWith('.md') || statSync(file).isDirectory()) {
          broken.push(`${page}: ${target} (an anchor into a file that is not a Markdown page)`);
          continue;
        }
        if (!headingAnchors(readFileSync(file, 'utf8')).has(anchor)) broken.push(`${page}: ${target} (no heading #${anchor} in ${relative(root, file)})`);
      }
    }
    expect(broken).toEqual([]);
    expect(checked, 'the docs link to each other').toBeGreaterThan(40);
  });

  it('the README links every page of docs/ (its map)', () => {
    const readme = linkTargets(read('README.md')).map((target) => target.split('#')[0]);
    const missing = pages.filter((page) => page.startsWith('docs/') && !readme.includes(page));
    expect(missing).toEqual([]);
  });

  it('finds what it should: a missing file, a missing anchor and a link inside code are told apart (control)', () => {
    const sample = '# A page\n\n## Containment: the sandbox in a process of its own\n\nSee [x](#containment-the-sandbox-in-a-process-of-its-own), `[y](nowhere.md)`.\n\n```sh\n# not a heading\n```\n';
    expect([...headingAnchors(sample)]).toEqual(['a-page', 'containment-the-sandbox-in-a-process-of-its-own']);
    expect(linkTargets(sample)).toEqual(['#containment-the-sandbox-in-a-process-of-its-own']);
    expect([...headingAnchors('## Traces (OpenTelemetry)\n## OAuth 2.1\n## OAuth 2.1\n')]).toEqual(['traces-opentelemetry', 'oauth-21', 'oauth-21-1']);
  });
});

describe('the commands the docs name', () => {
  const scripts = (file: string): string[] => Object.keys((JSON.parse(readFileSync(join(root, file), 'utf8')) as { scripts?: Record<string, string> }).scripts ?? {});
  const own = new Set(['test', 'start', 'install', 'pack', 'ci', ...scripts('package.json')]);
  // docs/authoring.md talks about the project `toolhost init` writes: its scripts, any language.
  const project = new Set(['test', 'start', 'install', 'pack', 'ci', ...['ts', 'js', 'c'].flatMap((lang) => scripts(`templates/${lang}/package.json`))]);

  /** `npm run X`, `npm test`, `npm start` a page names, anywhere (code blocks and inline code included). */
  const npmCommands = (text: string): string[] => [...text.matchAll(/\bnpm (?:run ([a-z][\w:-]*)|(test|start|install|pack|ci)\b)/g)].map((match) => match[1] ?? match[2]!);

  it('each npm script a page names exists (the package\'s; in docs/authoring.md, or on a line about a `toolhost init` project, that project\'s)', () => {
    const unknown: string[] = [];
    for (const page of pages) {
      for (const line of read(page).split('\n')) {
        const known = page === 'docs/authoring.md' || /toolhost init/.test(line) ? project : own;
        for (const command of npmCommands(line)) if (!known.has(command)) unknown.push(`${page}: npm ${command}`);
      }
    }
    expect(unknown).toEqual([]);
    expect(own.has('dev'), 'the package itself has no dev script: the check tells the two apart').toBe(false);
  });

  it('the README\'s quick start is npm install, npm test and npm start, and CI runs that npm test', () => {
    const readme = read('README.md');
    const quickStart = readme.slice(readme.indexOf('## Quick start'), readme.indexOf('\n## ', readme.indexOf('## Quick start') + 1));
    const first = fenced(quickStart, 'sh')[0] ?? '';
    expect(first.split('\n').filter(Boolean).map((line) => line.split('#')[0]!.trim())).toEqual(['npm install', 'npm test', 'npm start']);
    const ci = readFileSync(join(root, '.ci', 'run'), 'utf8').split('\n').map((line) => line.trim());
    expect(ci).toContain('npm test');
    expect(scripts('package.json')).toEqual(expect.arrayContaining(['test', 'start']));
  });

  it('CI runs every suite docs/testing.md lists', () => {
    const listed = fenced(read('docs/testing.md'), 'sh')[0] ?? '';
    // The command each line starts with (its comment may name others, e.g. npm pack).
    const suites = listed.split('\n').map((line) => /^npm (?:run (\S+)|(test)\b)/.exec(line)).filter((match) => match !== null).map((match) => match[1] ?? match[2]!);
    expect(suites.length).toBeGreaterThanOrEqual(7);
    const ci = readFileSync(join(root, '.ci', 'run'), 'utf8');
    for (const suite of suites) expect(ci, suite).toMatch(suite === 'test' ? /^npm test$/m : new RegExp(`^(?:[A-Z_]+=\\S+ )?npm run ${suite}\\b`, 'm'));
  });
});
