/**
 * `operless crd`: regenerate the CustomResourceDefinition YAML from the TypeScript resource
 * definitions (src/crd/resources.ts lists them), or with `--check` fail when the files on
 * disk are missing or stale — the check CI runs so a schema change never ships without its CRD.
 *
 * Guarantees: the output is deterministic; only files whose content changes are written;
 * `--check` writes nothing.
 */
import { relative, resolve } from 'node:path';
import { DEFAULT_CRD_DIR, staleCrds, writeCrds } from '../../crd/generate.ts';
import { UsageError, helpText, parseCommandArgs, stringOption, type CommandSpec } from '../args.ts';
import type { CommandResult } from './command.ts';

export const crdSpec: CommandSpec = {
  name: 'crd',
  summary: 'generate the CRD YAML from the TypeScript schemas (or check it is up to date)',
  usage: '[--out <dir>] [--check] [--json]',
  details:
    'Renders every resource listed in src/crd/resources.ts to <out>/<plural>.<group>.yaml.\n' +
    'With --check nothing is written, and the exit code is 1 when a file is missing or differs\n' +
    '(run `operless crd` and commit the result).',
  options: {
    out: { type: 'string', description: 'Folder for the CRD files (default: the project\'s infra/crds)', placeholder: 'dir' },
    check: { type: 'boolean', description: 'Write nothing; exit 1 when a CRD file is missing or stale' },
    json: { type: 'boolean', description: 'Print machine-readable JSON' },
  },
  examples: ['operless crd', 'operless crd --check', 'operless crd --out /tmp/crds --json'],
};

export async function crd(argv: string[]): Promise<CommandResult> {
  const args = parseCommandArgs(crdSpec, argv);
  if (args.values.help) return { output: helpText(crdSpec) };
  if (args.positionals.length > 0) throw new UsageError(`unexpected argument "${args.positionals[0]}"; use --out <dir> to choose the folder`);
  const out = stringOption(args.values, 'out');
  const outDir = out ? resolve(out) : DEFAULT_CRD_DIR;
  const shown = (p: string) => relative(process.cwd(), p) || p;
  const json = args.values.json === true;

  if (args.values.check === true) {
    const stale = staleCrds(outDir).map((s) => ({ path: shown(s.path), problem: s.problem }));
    const exitCode = stale.length === 0 ? 0 : 1;
    if (json) return { output: `${JSON.stringify({ outDir: shown(outDir), upToDate: stale.length === 0, stale }, null, 2)}\n`, exitCode };
    if (stale.length === 0) return { output: `CRDs in ${shown(outDir)} are up to date\n` };
    const lines = stale.map((s) => `✘ ${s.path} is ${s.problem}`);
    lines.push(`Run \`operless crd${out ? ` --out ${out}` : ''}\` and commit the result.`);
    return { output: `${lines.join('\n')}\n`, exitCode };
  }

  const written = writeCrds(outDir).map(shown);
  if (json) return { output: `${JSON.stringify({ outDir: shown(outDir), written }, null, 2)}\n` };
  if (written.length === 0) return { output: `CRDs in ${shown(outDir)} are up to date\n` };
  return { output: `${written.map((p) => `wrote ${p}`).join('\n')}\n` };
}
