/**
 * `operless upgrade`: today's scaffold merged into a project an older one generated. The
 * project is rendered from its operless.json (render.ts: "theirs"), each file is decided
 * against the pristine record (record.ts: "base") and the file as it is ("ours") by decide.ts,
 * and — unless `dryRun` — the results are written and the record replaced by today's render.
 *
 * Guarantees: nothing is written before every decision is made (a bad operless.json or
 * package.json writes nothing); with `dryRun` nothing is written at all; conflicts are written
 * with markers and listed, never resolved silently.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { ProjectFile } from '../project-file.ts';
import { operlessPackage, projectToolVersions } from '../own-package.ts';
import { decideDerived, decideFile, upgradePackageJson, type FileDecision, type Merge } from './decide.ts';
import { gitMergeFile } from './merge-file.ts';
import { readRecord, readSteps, writeRecord } from './record.ts';
import { renderProject, stepsOf, type RenderInputs, type Step } from './render.ts';

const WATCHES_FILE = 'infra/forwarder/watches.yaml';

export interface UpgradeOptions {
  /** The new `operless` dependency; default `^<this Operless version>`. */
  readonly operlessDependency?: string;
  readonly dryRun?: boolean;
  /** The line merge (default: `git merge-file`). */
  readonly merge?: Merge;
}

export interface UpgradeResult {
  /** The scaffold version operless.json recorded (absent: older than `operless upgrade`). */
  readonly from?: string;
  readonly to: string;
  readonly operlessDependency: string;
  /** One per file today's scaffold generates (CRDs aside), in path order. */
  readonly files: readonly FileDecision[];
  /** Dev tool pins the author changed and the scaffold changed too: kept as the author set them. */
  readonly keptPins: readonly string[];
  /** False with `dryRun`. */
  readonly written: boolean;
}

/** `project` is the project's parsed operless.json. */
export function upgradeProject(root: string, project: ProjectFile, options: UpgradeOptions = {}): UpgradeResult {
  const version = operlessPackage().version;
  const operlessDependency = options.operlessDependency ?? `^${version}`;
  const read = (path: string) => (existsSync(join(root, path)) ? readFileSync(join(root, path), 'utf8') : undefined);
  const next: ProjectFile = { ...project, scaffoldVersion: version };
  const steps = stepsOf(next, readSteps(root));
  const rendered = renderProject(next, renderInputs(read, operlessDependency, steps));
  const record = readRecord(root);
  const merge = options.merge ?? gitMergeFile(version);
  const files: FileDecision[] = [];
  let keptPins: string[] = [];
  for (const path of [...rendered.files.keys()].sort()) {
    const theirs = rendered.files.get(path) ?? '';
    const ours = read(path);
    if (rendered.derived.has(path)) {
      files.push(decideDerived(path, ours, theirs));
    } else if (path === 'package.json' && ours !== undefined) {
      const { decision, kept } = upgradePackageJson(record.get(path), ours, theirs);
      files.push(decision);
      keptPins = kept;
    } else {
      const base = record.get(path);
      files.push(decideFile(path, { ...(base !== undefined ? { base } : {}), ...(ours !== undefined ? { ours } : {}), theirs }, merge));
    }
  }
  if (!options.dryRun) {
    for (const file of files) {
      if (file.content === undefined) continue;
      mkdirSync(dirname(join(root, file.path)), { recursive: true });
      writeFileSync(join(root, file.path), file.content);
    }
    writeRecord(root, rendered, steps);
  }
  return { ...(project.scaffoldVersion ? { from: project.scaffoldVersion } : {}), to: version, operlessDependency, files, keptPins, written: !options.dryRun };
}

/**
 * Rewrites the pristine record of the project at `root` for `project`, after init, create api
 * (`step`: the kind) or create webhook (`step`: its webhooks).
 */
export function recordScaffold(root: string, project: ProjectFile, step?: Step): void {
  const read = (path: string) => (existsSync(join(root, path)) ? readFileSync(join(root, path), 'utf8') : undefined);
  const steps = stepsOf(project, [...readSteps(root), ...(step ? [step] : [])]);
  writeRecord(root, renderProject(project, renderInputs(read, dependencyOf(read('package.json')) ?? `^${operlessPackage().version}`, steps)), steps);
}

function renderInputs(read: (path: string) => string | undefined, operlessDependency: string, steps: readonly Step[]): RenderInputs {
  const watches = read(WATCHES_FILE);
  return { operlessDependency, toolVersions: projectToolVersions(), steps, ...(watches !== undefined ? { watches } : {}) };
}

/** The `operless` dependency of a package.json text; undefined when it has none or is not JSON. */
function dependencyOf(packageJson: string | undefined): string | undefined {
  try {
    const dependency = (JSON.parse(packageJson ?? 'null') as { dependencies?: Record<string, unknown> } | null)?.dependencies?.operless;
    return typeof dependency === 'string' ? dependency : undefined;
  } catch {
    return undefined;
  }
}
