/**
 * The three-way line merge of `operless upgrade`: `git merge-file`, which is there wherever git
 * is. Conflicting hunks are written between `<<<<<<< <path> (yours)` / `=======` /
 * `>>>>>>> <path> (operless <version>)` markers, the same markers git writes. A missing git is
 * an error that says so, never a silent skip.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ScaffoldError } from '../names.ts';
import type { Merge } from './decide.ts';

/** A `Merge` by `git merge-file`; `version` labels the scaffold's side of a conflict. */
export function gitMergeFile(version: string): Merge {
  return (path, { base, ours, theirs }) => {
    const dir = mkdtempSync(join(tmpdir(), 'operless-upgrade-'));
    try {
      const files = { ours: join(dir, 'ours'), base: join(dir, 'base'), theirs: join(dir, 'theirs') };
      writeFileSync(files.ours, ours);
      writeFileSync(files.base, base);
      writeFileSync(files.theirs, theirs);
      const r = spawnSync(
        'git',
        [
          'merge-file',
          '-p',
          '-L',
          `${path} (yours)`,
          '-L',
          `${path} (scaffold before)`,
          '-L',
          `${path} (operless ${version})`,
          files.ours,
          files.base,
          files.theirs,
        ],
        { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
      );
      if (r.error)
        throw new ScaffoldError(
          `operless upgrade merges edited files with \`git merge-file\`, and git could not be run (${r.error.message}); install git and run it again`,
        );
      // Exit status: the number of conflicts (0: clean); negative (here > 127) on error.
      if (r.status === null || r.status > 127) throw new ScaffoldError(`git merge-file failed on ${path}: ${r.stderr.trim()}`);
      return { text: r.stdout, conflicts: r.status };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
}
