/**
 * The rule on worktrees granted to different tools: no tool's worktree may
 * lie inside another tool's WRITABLE worktree (ELEVATED and up), nor be
 * reached through an entry that worktree holds (a symlink on the way to it).
 *
 * Why: a worktree's root is resolved by path when a call starts. A tool that
 * may write the outer worktree can rename the inner one's directory (or a
 * link on the way) and put a symlink in its place, using only moves its own
 * confinement allows; the inner tool's next call then has its root anywhere
 * (a read-only tool read /proc/self/environ; an ELEVATED one wrote outside
 * every worktree: issue 36, M9).
 *
 * What it guarantees: a config (config/checks.ts, both orders of the
 * entries) and a registry (registration of a tool whose grant names a
 * worktree, core/registry.ts) holding such a pair are refused, naming both;
 * a call that binds a worktree of its own (`workingDir`, `--worktree`, a
 * server's worktree option) that nests so with a registered tool's grant is
 * refused at admission (policy/capabilities.ts, PERMISSION_DENIED).
 * Two tools may share the same worktree (neither can move a root it is
 * inside of), and read-only worktrees may nest (reading cannot move roots).
 *
 * What it does not guarantee: two calls' own worktrees are not compared with
 * each other (each is chosen by the operator, never by a client); a symlink
 * made on the way after the check by someone other than a guest is seen only
 * at the next check (as for host-owned paths).
 */
import { resolve as resolvePath } from 'node:path';
import { overlapWith, realPath } from './host-owned-paths.js';
import { PRIVILEGE_LABELS, labelRank, parseLabel } from './labels.js';

/** A worktree granted to one holder (a tool, a component's tools, a config entry). */
export interface GrantedWorktree<Where = unknown> {
  /** Who holds it, as messages name it (e.g. `tools[2]`, a tool name). */
  name: string;
  /** The worktree (absolute). */
  worktree: string;
  /** The grant's highest privilege level (its label, any case; absent: MINIMAL). */
  privilege?: string;
  /** Anything the caller needs back (a config position). */
  where?: Where;
}

/** A worktree nested in another's writable one. */
export interface NestedWorktree<Where = unknown> {
  /** The writable worktree that holds the other. */
  outer: GrantedWorktree<Where>;
  inner: GrantedWorktree<Where>;
  /** The entry the outer worktree holds: the inner root, or a link on the way to it. */
  entry: string;
}

/** Whether a grant's privilege lets its guests write the worktree. */
export function writesWorktree(privilege: string | undefined): boolean {
  const label = parseLabel(PRIVILEGE_LABELS, privilege ?? 'MINIMAL');
  return label !== undefined && labelRank(PRIVILEGE_LABELS, label) >= labelRank(PRIVILEGE_LABELS, 'ELEVATED');
}

/** Every pair of `worktrees` where one lies inside (or is reached through) another's writable worktree. */
export function nestedWorktrees<Where>(worktrees: ReadonlyArray<GrantedWorktree<Where>>): Array<NestedWorktree<Where>> {
  const found: Array<NestedWorktree<Where>> = [];
  for (const outer of worktrees) {
    if (!writesWorktree(outer.privilege)) continue;
    const realOuter = realPath(outer.worktree);
    for (const inner of worktrees) {
      if (inner === outer || realPath(inner.worktree) === realOuter) continue;
      const overlap = overlapWith(outer.worktree, [{ kind: 'worktree', path: inner.worktree }]);
      if (overlap?.relation !== 'holds') continue;
      found.push({ outer, inner, entry: overlap.entry ?? inner.worktree });
    }
  }
  return found;
}

/**
 * The first of `others` that `candidate` nests with: `candidate` writable and holding it, or it writable and
 * holding `candidate` (one worktree bound to one call, against the tools' grants). O(others) path resolutions.
 */
export function nestingWith<Where>(candidate: GrantedWorktree<Where>, others: ReadonlyArray<GrantedWorktree<Where>>): NestedWorktree<Where> | undefined {
  const realCandidate = realPath(candidate.worktree);
  const writable = writesWorktree(candidate.privilege);
  for (const other of others) {
    const otherWritable = writesWorktree(other.privilege);
    if ((!writable && !otherWritable) || realPath(other.worktree) === realCandidate) continue;
    if (writable) {
      const overlap = overlapWith(candidate.worktree, [{ kind: 'worktree', path: other.worktree }]);
      if (overlap?.relation === 'holds') return { outer: candidate, inner: other, entry: overlap.entry ?? other.worktree };
    }
    if (otherWritable) {
      const overlap = overlapWith(other.worktree, [{ kind: 'worktree', path: candidate.worktree }]);
      if (overlap?.relation === 'holds') return { outer: other, inner: candidate, entry: overlap.entry ?? candidate.worktree };
    }
  }
  return undefined;
}

/** What a message says of a nested pair. */
export function describeNesting(nested: NestedWorktree): string {
  const { outer, inner, entry } = nested;
  const through = realPath(entry) === realPath(inner.worktree) ? '' : ` (through ${entry})`;
  return `the worktree ${inner.worktree} of ${inner.name} lies inside the writable worktree ${outer.worktree} of ${outer.name}${through}: `
    + `${outer.name} could move ${inner.name}'s root anywhere; give them separate directories, or lower ${outer.name}'s privilege to DEFAULT (read-only)`;
}

/** The worktrees `tools` are granted (one entry a tool; `where` is the tool). */
export function grantedWorktreesOf<T extends { name: string; grant?: { worktree?: string; privilege?: string } }>(tools: Iterable<T>): Array<GrantedWorktree<T>> {
  return [...tools].flatMap((tool) => tool.grant?.worktree === undefined ? [] : [{
    name: `tool "${tool.name}"`, worktree: resolvePath(tool.grant.worktree), ...(tool.grant.privilege === undefined ? {} : { privilege: tool.grant.privilege }), where: tool,
  }]);
}

/** One entry per worktree and mode (a component's tools share their grant's). */
export function distinctWorktrees<Where>(worktrees: Array<GrantedWorktree<Where>>): Array<GrantedWorktree<Where>> {
  const seen = new Set<string>();
  return worktrees.filter(({ worktree, privilege }) => {
    const key = `${writesWorktree(privilege) ? 'w' : 'r'}\0${worktree}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}
