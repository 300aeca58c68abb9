/**
 * `operless crd`: regenerate the CustomResourceDefinition YAML from the TypeScript resource
 * definitions, or with `--check` fail when the files on disk are missing or stale — the check
 * CI runs so a schema change never ships without its CRD.
 *
 * Which resources: an Operless project lists them in `src/resources.ts` (`export const
 * resources`, created by `operless init`, extended by `operless create api`) — the Operless
 * repository itself too. Output goes to the project's `infra/crds/` unless `--out` says otherwise.
 *
 * Guarantees: the output is deterministic; only files whose content changes are written;
 * `--check` writes nothing.
 */
import { existsSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { crdWarnings, DEFAULT_GENERATOR, staleCrds, writeCrds, type GeneratedResource } from '../../crd/generate.ts';
import { UsageError, helpText, parseCommandArgs, stringOption, type CommandSpec } from '../args.ts';
import { PROJECT_OPTION, projectDir } from '../project-dir.ts';
import type { CommandResult } from './command.ts';

export const crdSpec: CommandSpec = {
  name: 'crd',
  summary: 'generate the CRD YAML from the TypeScript schemas (or check it is up to date)',
  usage: '[--out <dir>] [--check] [--json]',
  details:
    'Renders every resource the project lists in src/resources.ts (`export const resources`) to\n' +
    "<out>/<plural>.<group>.yaml (default: the project's infra/crds).\n" +
    'With --check nothing is written, and the exit code is 1 when a file is missing or differs\n' +
    '(run `operless crd` and commit the result).',
  options: {
    ...PROJECT_OPTION,
    out: { type: 'string', description: 'Folder for the CRD files (default: <project>/infra/crds)', placeholder: 'dir' },
    check: { type: 'boolean', description: 'Write nothing; exit 1 when a CRD file is missing or stale' },
    json: { type: 'boolean', description: 'Print machine-readable JSON' },
  },
  examples: ['operless crd', 'operless crd --check', 'operless crd --out /tmp/crds --json'],
};

export async function crd(argv: string[]): Promise<CommandResult> {
  const args = parseCommandArgs(crdSpec, argv);
  if (args.values.help) return { output: helpText(crdSpec) };
  if (args.positionals.length > 0) throw new UsageError(`unexpected argument "${args.positionals[0]}"; use --out <dir> to choose the folder`);
  const root = projectDir(args);
  const { resources, crdDir, generator } = await loadResources(root);
  const out = stringOption(args.values, 'out');
  const outDir = out ? resolve(out) : crdDir;
  const shown = (p: string) => relative(process.cwd(), p) || p;
  const json = args.values.json === true;
  // A served version above the storage one puts the conversion webhook on every default read: said on every run.
  const warnings = crdWarnings(resources);
  const warned = warnings.map((w) => `⚠ ${w}\n`).join('');

  if (args.values.check === true) {
    const stale = staleCrds(outDir, resources, generator).map((s) => ({ path: shown(s.path), problem: s.problem }));
    const exitCode = stale.length === 0 ? 0 : 1;
    if (json) return { output: `${JSON.stringify({ outDir: shown(outDir), upToDate: stale.length === 0, stale, warnings }, null, 2)}\n`, exitCode };
    if (stale.length === 0) return { output: `CRDs in ${shown(outDir)} are up to date\n${warned}` };
    const lines = stale.map((s) => `✘ ${s.path} is ${s.problem}`);
    lines.push(`Run \`operless crd${out ? ` --out ${out}` : ''}\` and commit the result.`);
    return { output: `${lines.join('\n')}\n${warned}`, exitCode };
  }

  const written = writeCrds(outDir, resources, generator).map(shown);
  if (json) return { output: `${JSON.stringify({ outDir: shown(outDir), written, warnings }, null, 2)}\n` };
  if (written.length === 0) return { output: `CRDs in ${shown(outDir)} are up to date\n${warned}` };
  return { output: `${written.map((p) => `wrote ${p}`).join('\n')}\n${warned}` };
}

/** The resources of the project at `root` and its CRD folder. */
export async function loadResources(root: string): Promise<{ resources: readonly GeneratedResource[]; crdDir: string; generator: string }> {
  const file = join(root, 'src', 'resources.ts');
  if (existsSync(file)) {
    let mod: { resources?: unknown };
    try {
      mod = (await import(pathToFileURL(file).href)) as { resources?: unknown };
    } catch (err) {
      throw new Error(`cannot load ${relative(process.cwd(), file) || file}: ${(err as Error).message} (fix the error, then run \`operless crd\` again)`, {
        cause: err,
      });
    }
    if (!Array.isArray(mod.resources) || !mod.resources.every(isGeneratedResource)) {
      throw new UsageError(`${relative(process.cwd(), file) || file} must export \`resources\`: an array of { definition, source } (see \`operless init\`)`);
    }
    return { resources: mod.resources, crdDir: join(root, 'infra', 'crds'), generator: DEFAULT_GENERATOR };
  }
  throw new UsageError(`no src/resources.ts in ${root}: run this in an Operless project (\`operless init\` creates one), or pass --project <dir>`);
}

function isGeneratedResource(value: unknown): value is GeneratedResource {
  const r = value as { definition?: { crdName?: unknown }; source?: unknown } | null;
  return typeof r === 'object' && r !== null && typeof r.definition?.crdName === 'string' && typeof r.source === 'string';
}
