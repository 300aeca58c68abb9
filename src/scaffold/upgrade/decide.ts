/**
 * What `operless upgrade` does with each file, decided from three versions of it: `base` (what
 * the old scaffold generated: the project's pristine record), `ours` (the file as it is now,
 * maybe edited by hand) and `theirs` (what today's scaffold generates). Pure; the merge itself
 * is passed in (merge-file.ts runs `git merge-file`).
 *
 * Guarantees: an edit of the author is never dropped — a file the scaffold did not change is
 * left as it is; one the author did not change takes the new template; one both changed is
 * merged line by line, and overlapping changes are kept side by side between conflict markers
 * and reported. A file the author deleted stays deleted; a file without a recorded base that
 * differs from today's template is left alone and listed. package.json is merged by key
 * (`upgradePackageJson`), so `npm install` edits never conflict with a new pin.
 */
import { ScaffoldError } from '../names.ts';

export type Outcome =
  /** A file today's scaffold generates that the project does not have. */
  | 'created'
  /** Not edited by the author: replaced by the new template. */
  | 'updated'
  /** Edited by the author and changed by the scaffold: merged without conflict. */
  | 'merged'
  /** Both changed the same lines: written with conflict markers. */
  | 'conflicted'
  /** Regenerated from operless.json as a whole (never hand-edited in place). */
  | 'regenerated'
  /** Nothing to do: the scaffold did not change it (any edit of the author is kept), or it is already the new template. */
  | 'unchanged'
  /** Deleted by the author: left deleted. */
  | 'deleted-by-you'
  /** No record of what the old scaffold generated, and it differs from today's template: left alone. */
  | 'no-base';

export interface FileDecision {
  readonly path: string;
  readonly outcome: Outcome;
  /** The new content, for outcomes that write. */
  readonly content?: string;
  /** Conflict hunks (outcome `conflicted`). */
  readonly conflicts?: number;
}

/** A three-way line merge: the merged text (with conflict markers) and its number of conflicts. */
export type Merge = (path: string, versions: { base: string; ours: string; theirs: string }) => { text: string; conflicts: number };

export interface FileVersions {
  readonly base?: string;
  readonly ours?: string;
  readonly theirs: string;
}

/** The decision for one scaffold-owned file (not derived, not package.json). */
export function decideFile(path: string, { base, ours, theirs }: FileVersions, merge: Merge): FileDecision {
  if (ours === undefined) return base === undefined ? { path, outcome: 'created', content: theirs } : { path, outcome: 'deleted-by-you' };
  if (ours === theirs || base === theirs) return { path, outcome: 'unchanged' };
  if (base === undefined) return { path, outcome: 'no-base' };
  if (base === ours) return { path, outcome: 'updated', content: theirs };
  const merged = merge(path, { base, ours, theirs });
  return merged.conflicts > 0
    ? { path, outcome: 'conflicted', content: merged.text, conflicts: merged.conflicts }
    : { path, outcome: merged.text === ours ? 'unchanged' : 'merged', content: merged.text };
}

/** A file regenerated from operless.json: today's content, whatever is there. */
export function decideDerived(path: string, ours: string | undefined, theirs: string): FileDecision {
  if (ours === theirs) return { path, outcome: 'unchanged' };
  return { path, outcome: ours === undefined ? 'created' : 'regenerated', content: theirs };
}

type PackageJson = { dependencies?: Record<string, string>; devDependencies?: Record<string, string>; [key: string]: unknown };

/**
 * package.json merged by key: the `operless` dependency set to today's; each dev tool pin the
 * scaffold changed taken when the author left it as the old scaffold pinned it (kept, and
 * listed in `kept`, when they changed it too). Everything else is the author's.
 */
export function upgradePackageJson(base: string | undefined, ours: string, theirs: string, where = 'package.json'): { decision: FileDecision; kept: string[] } {
  const parse = (text: string, which: string): PackageJson => {
    try {
      const value = JSON.parse(text) as unknown;
      if (value && typeof value === 'object' && !Array.isArray(value)) return value as PackageJson;
    } catch {
      // reported below
    }
    throw new ScaffoldError(`${where} (${which}) is not a JSON object; fix it and run \`operless upgrade\` again`);
  };
  const mine = parse(ours, 'yours');
  const old = base === undefined ? undefined : parse(base, 'recorded');
  const next = parse(theirs, 'new');
  const kept: string[] = [];
  const result: PackageJson = structuredClone(mine);
  const dependency = next.dependencies?.operless;
  if (dependency !== undefined) result.dependencies = { ...result.dependencies, operless: dependency };
  for (const [tool, version] of Object.entries(next.devDependencies ?? {})) {
    const was = old?.devDependencies?.[tool];
    const have = mine.devDependencies?.[tool];
    if (have === version || was === version) continue;
    if (have === undefined || have === was) result.devDependencies = { ...result.devDependencies, [tool]: version };
    else kept.push(`devDependencies.${tool} (yours ${have}, the scaffold's ${version})`);
  }
  const content = `${JSON.stringify(result, null, 2)}\n`;
  return { decision: content === ours ? { path: where, outcome: 'unchanged' } : { path: where, outcome: 'updated', content }, kept };
}
