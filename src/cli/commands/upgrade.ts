/**
 * `operless upgrade [--project <dir>] [--operless-version <spec>] [--dry-run] [--json]`: merges
 * today's scaffold into a project an older one generated, keeping the author's edits (a
 * three-way merge against the pristine record in .scaffold/), bumps the `operless` dependency,
 * and says what happened to each file. Exit 0 when everything merged; 1 when a file has
 * conflicts (written with markers, listed); 2 for bad arguments or an unreadable project.
 */
import { relative, resolve } from 'node:path';
import { UsageError, helpText, parseCommandArgs, stringOption, type CommandSpec } from '../args.ts';
import { scaffoldUpgrade, type FileDecision, type Outcome, type UpgradeResult } from '../../scaffold/index.ts';
import type { CommandResult } from './command.ts';
import { JSON_RESULT_OPTION, runScaffold } from './scaffold-output.ts';

export const upgradeSpec: CommandSpec = {
  name: 'upgrade',
  summary: "merge this Operless version's scaffold into the project, keeping your edits",
  usage: '[options]',
  options: {
    project: { type: 'string', placeholder: 'dir', description: 'Project directory', default: '.' },
    'operless-version': {
      type: 'string',
      placeholder: 'spec',
      description: 'The operless dependency to write into package.json, e.g. ^0.2.0 or file:../operless (default: ^<this version>)',
    },
    'dry-run': { type: 'boolean', description: 'Show what would change; write nothing' },
    ...JSON_RESULT_OPTION,
  },
  examples: ['npx operless@latest upgrade --dry-run', 'npx operless@latest upgrade && npm install && npm test'],
  details:
    'Files you did not edit take the new templates; files you edited are merged line by line (git merge-file); where both changed the same lines the file gets conflict markers and the command exits 1. infra/crds/ is yours: run `npm run crd` after upgrading.',
};

/** The order files are listed in, and each outcome's word in the report. */
const SHOWN: readonly [Outcome, string][] = [
  ['conflicted', 'conflicted'],
  ['merged', 'merged'],
  ['updated', 'updated'],
  ['created', 'created'],
  ['regenerated', 'regenerated'],
  ['no-base', 'not merged'],
  ['deleted-by-you', 'kept deleted'],
];

export async function upgrade(argv: string[]): Promise<CommandResult> {
  const { values, positionals } = parseCommandArgs(upgradeSpec, argv);
  if (values.help) return { output: helpText(upgradeSpec) };
  if (positionals.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(positionals[0])}; the project is --project <dir>`);
  const root = resolve(stringOption(values, 'project') ?? '.');
  const dependency = values['operless-version'];
  if (dependency !== undefined && (typeof dependency !== 'string' || dependency.trim() === '')) {
    throw new UsageError('--operless-version needs a dependency spec, e.g. --operless-version ^0.2.0 or file:../operless');
  }
  const dryRun = values['dry-run'] === true;
  const result = runScaffold(() => scaffoldUpgrade(root, { dryRun, ...(dependency ? { operlessDependency: dependency } : {}) }));
  const conflicted = result.files.filter((f) => f.outcome === 'conflicted');
  const exitCode = conflicted.length > 0 ? 1 : 0;
  if (values.json) return { output: `${JSON.stringify({ ...result, files: result.files.map(({ content: _content, ...f }) => f) }, null, 2)}\n`, exitCode };
  return { output: report(result, relative(process.cwd(), root) || '.'), exitCode };
}

function report(result: UpgradeResult, where: string): string {
  const from = result.from ? `operless ${result.from}` : 'an older operless (no scaffold version recorded)';
  const lines = [
    `${result.written ? 'Upgraded' : 'Dry run: would upgrade'} ${where} from the scaffold of ${from} to ${result.to} (operless dependency ${result.operlessDependency}):`,
  ];
  for (const [outcome, word] of SHOWN) {
    for (const file of result.files.filter((f) => f.outcome === outcome)) lines.push(`  ${word.padEnd(12)} ${file.path}${describe(file)}`);
  }
  const unchanged = result.files.filter((f) => f.outcome === 'unchanged').length;
  lines.push(`  ${unchanged} file(s) unchanged (any edits of yours kept)`);
  for (const pin of result.keptPins) lines.push(`  kept your pin ${pin}`);
  const conflicted = result.files.filter((f) => f.outcome === 'conflicted');
  const noBase = result.files.filter((f) => f.outcome === 'no-base');
  lines.push('');
  if (noBase.length > 0) {
    lines.push(`Not merged (no record of what the old scaffold generated; compare by hand with .scaffold/files/): ${noBase.map((f) => f.path).join(', ')}`);
  }
  if (conflicted.length > 0) {
    lines.push(
      `Conflicts: both you and the scaffold changed the same lines. Resolve the <<<<<<< ... >>>>>>> blocks in: ${conflicted.map((f) => f.path).join(', ')}`,
    );
  }
  lines.push(
    'Next:',
    ...(result.written ? [] : ['  operless upgrade            # without --dry-run, to write it']),
    '  npm install && npm run crd && npm test',
    '',
  );
  return lines.join('\n');
}

function describe(file: FileDecision): string {
  return file.outcome === 'conflicted' ? ` (${file.conflicts} conflict${file.conflicts === 1 ? '' : 's'})` : '';
}
