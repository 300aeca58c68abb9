#!/usr/bin/env node
/**
 * `operless`: the command line for operators built with Operless.
 *
 * Every command has `--help`, prints human-readable text by default and JSON with `--json`,
 * exits non-zero on failure, and turns every error into one line saying what happened and
 * what to do (a stack trace only with OPERLESS_DEBUG=1).
 */
import { readFileSync } from 'node:fs';
import { UsageError } from './args.ts';
import type { CommandResult } from './commands/command.ts';

type Command = (argv: string[]) => Promise<CommandResult>;

const COMMANDS: Record<string, { summary: string; load: () => Promise<Command> }> = {
  init: { summary: 'create a new operator project that depends on Operless', load: async () => (await import('./commands/init.ts')).init },
  'create api': {
    summary: 'add a kind to the project: schema, controller, function, queues, watches, RBAC, test',
    load: async () => (await import('./commands/create-api.ts')).createApi,
  },
  'create webhook': {
    summary: 'add admission (defaulting, validation) and conversion webhooks to a kind',
    load: async () => (await import('./commands/create-webhook.ts')).createWebhook,
  },
  upgrade: {
    summary: "merge this Operless version's scaffold into the project, keeping your edits",
    load: async () => (await import('./commands/upgrade.ts')).upgrade,
  },
  dev: { summary: 'run the whole loop locally: control plane, queue, forwarder, functions', load: async () => (await import('./commands/dev.ts')).dev },
  'dlq list': { summary: 'show dead-lettered messages and why they failed', load: async () => (await import('./commands/dlq.ts')).dlqList },
  'dlq redrive': { summary: 'move dead-lettered messages back to the work queue', load: async () => (await import('./commands/dlq.ts')).dlqRedrive },
  'dlq replay': {
    summary: "run one dead-lettered message through the project's current code, every write a dry run",
    load: async () => (await import('./commands/dlq-replay.ts')).dlqReplay,
  },
  enqueue: {
    summary: 'send a reconcile message for objects (one, several, or --all of a kind)',
    load: async () => (await import('./commands/enqueue.ts')).enqueue,
  },
  preview: {
    summary: "show what the project's code would change in a live cluster (every write a server-side dry run)",
    load: async () => (await import('./commands/preview.ts')).preview,
  },
  replay: { summary: 'replay an EventBridge archive into its bus for a time range', load: async () => (await import('./commands/replay.ts')).replay },
  status: { summary: 'queue and DLQ depth, forwarder health, objects not yet reconciled', load: async () => (await import('./commands/status.ts')).status },
  doctor: {
    summary: "check cluster access, CRDs, the functions' RBAC, the queues and EKS access",
    load: async () => (await import('./commands/doctor.ts')).doctor,
  },
  crd: { summary: 'generate the CRD YAML from the TypeScript schemas (or --check it)', load: async () => (await import('./commands/crd.ts')).crd },
  rbac: {
    summary: "print the project's RBAC, per namespace with --namespaces (namespace-scoped operation)",
    load: async () => (await import('./commands/rbac.ts')).rbac,
  },
};

export function usage(): string {
  const width = Math.max(...Object.keys(COMMANDS).map((c) => c.length)) + 2;
  return [
    'operless — Kubernetes operators that run as serverless functions',
    '',
    'Usage: operless <command> [options]',
    '',
    'Commands:',
    ...Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(width)}${c.summary}`),
    '',
    'Run `operless <command> --help` for the options of one command, `operless --version` for the version.',
    '',
  ].join('\n');
}

/** Finds the command named by the first one or two words of argv. */
export function findCommand(argv: string[]): { name: string; rest: string[] } | undefined {
  const two = argv.slice(0, 2).join(' ');
  if (COMMANDS[two]) return { name: two, rest: argv.slice(2) };
  const one = argv[0];
  if (one && COMMANDS[one]) return { name: one, rest: argv.slice(1) };
  return undefined;
}

/**
 * The installed package's version (its package.json: two folders up from both src/cli/main.ts in a
 * checkout and dist/cli/main.js in the package).
 */
export function packageVersion(): string {
  const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: unknown };
  return typeof manifest.version === 'string' ? manifest.version : 'unknown';
}

export async function run(argv: string[]): Promise<number> {
  if (argv.length === 1 && (argv[0] === '--version' || argv[0] === '-v' || argv[0] === 'version')) {
    process.stdout.write(`operless ${packageVersion()}\n`);
    return 0;
  }
  if (argv.length === 0 || argv[0] === '--help' || argv[0] === '-h' || argv[0] === 'help') {
    process.stdout.write(usage());
    return argv.length === 0 ? 2 : 0;
  }
  const found = findCommand(argv);
  if (!found) {
    const group = Object.keys(COMMANDS).filter((c) => c.startsWith(`${argv[0]} `));
    process.stderr.write(
      group.length > 0
        ? `operless: "${argv[0]}" needs a subcommand: ${group.map((g) => g.split(' ')[1]).join(', ')}\n`
        : `operless: unknown command "${argv[0]}". Run \`operless --help\` for the list.\n`,
    );
    return 2;
  }
  try {
    const command = await COMMANDS[found.name]!.load();
    const result = await command(found.rest);
    process.stdout.write(result.output);
    return result.exitCode ?? 0;
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`operless ${found.name}: ${err.message}\n`);
      return 2;
    }
    const message = err instanceof Error ? err.message : String(err);
    process.stderr.write(`operless ${found.name}: ${message}\n`);
    if (process.env.OPERLESS_DEBUG === '1' && err instanceof Error && err.stack) process.stderr.write(`${err.stack}\n`);
    else process.stderr.write('(set OPERLESS_DEBUG=1 for a stack trace)\n');
    return 1;
  }
}

if (import.meta.main) {
  process.exitCode = await run(process.argv.slice(2));
}
