/**
 * The paths a build takes from the project it builds (package.json's `toolhost.entry`, `toolhost.sources`,
 * `toolhost.out`, and the `src/`, `dist/` and sources it finds by itself) resolve inside the project directory
 * after symlinks, or the build is refused with a PROJECT_INVALID BuildError that names the field and the path,
 * never what the file holds: a project is untrusted input, and neither its sources nor its output may reach outside it.
 *
 * Guarantees: a source (or include directory) is checked on its real path (every symlink followed) before anything
 * reads it; the output's real location is checked the same way (a missing tail is resolved from its deepest existing
 * ancestor; a dangling symlink is refused), and `writeComponent` never follows a symlink at the output itself.
 * Does not: confine what a compiler reads on its own (a C `#include "/abs/path"` is clang's to follow; build a
 * project you do not trust in a sandbox of its own), or guard against another process changing the project's
 * directories while a build runs. `--out` (the caller's own choice) is not contained.
 */
import { constants, existsSync, lstatSync, realpathSync } from 'node:fs';
import { mkdir, open } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { BuildError } from './errors.js';

/** The project directory's real path: the root every contained path must be under. */
export function projectRoot(dir: string): string {
  return realpathSync(dir);
}

/** Whether `real` (a real path) is `root` or below it. */
export function isInside(root: string, real: string): boolean {
  const rel = relative(root, real);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}

function outside(field: string, raw: string, why = 'resolves outside the project'): BuildError {
  return new BuildError('PROJECT_INVALID', `${field} ${JSON.stringify(raw)} ${why} (after symlinks); a build reads and writes only inside the project directory`);
}

/**
 * A file the build will read (a source, the entry), as its real path: `raw` is resolved against the project
 * directory `dir`. `field` names where it came from, for the message (e.g. `package.json: toolhost.entry`).
 */
export function containedSource(root: string, dir: string, raw: string, field: string): string {
  const path = resolve(dir, raw);
  let real: string;
  try {
    real = realpathSync(path);
  } catch {
    throw new BuildError('PROJECT_INVALID', `${field} ${JSON.stringify(raw)} does not exist`);
  }
  if (!isInside(root, real)) throw outside(field, raw);
  return real;
}

/** A directory the build lists or hands the compiler (`src/`): `rel` under `dir` when it exists inside the project, undefined when it does not exist. */
export function containedDir(root: string, dir: string, rel: string): string | undefined {
  const path = join(dir, rel);
  if (!existsSync(path)) return undefined;
  if (!isInside(root, realpathSync(path))) throw outside('the directory', rel);
  return path;
}

/**
 * Where the component will be written: `raw` resolved against `dir`, checked on the real path of its deepest
 * existing ancestor (and of the file itself when it exists). A dangling symlink at the file is refused (a write
 * would create its target, wherever that is). Returns the resolved (not real) path, as the author named it.
 */
export function containedOutput(root: string, dir: string, raw: string, field: string): string {
  const path = resolve(dir, raw);
  let link: boolean;
  try {
    link = lstatSync(path).isSymbolicLink();
  } catch {
    link = false;
  }
  if (link) {
    let real: string;
    try {
      real = realpathSync(path);
    } catch {
      throw outside(field, raw, 'is a symlink to nothing');
    }
    if (!isInside(root, real)) throw outside(field, raw);
    return path;
  }
  // The deepest ancestor that exists, followed through its symlinks; what is below it does not exist yet.
  let existing = path;
  const missing: string[] = [];
  while (!existsSync(existing)) {
    const parent = dirname(existing);
    if (parent === existing) break;
    missing.unshift(basename(existing));
    existing = parent;
  }
  const real = join(realpathSync(existing), ...missing);
  if (!isInside(root, real)) throw outside(field, raw);
  return path;
}

/**
 * Write a component to `outFile` (parent directories created), never through a symlink at `outFile` itself
 * (O_NOFOLLOW: a link placed there is refused, not followed).
 */
export async function writeComponent(outFile: string, bytes: Uint8Array): Promise<void> {
  await mkdir(dirname(resolve(outFile)), { recursive: true });
  let file;
  try {
    file = await open(outFile, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW, 0o644);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ELOOP') throw new BuildError('PROJECT_INVALID', `${outFile} is a symlink: a component is never written through one`);
    throw error;
  }
  try {
    await file.writeFile(bytes);
  } finally {
    await file.close();
  }
}
