/**
 * `operless dlq replay <message id>`: run one dead-lettered message through the project's
 * current code against the chosen cluster, as a preview (src/preview/run.ts: every write a
 * server-side dry run) — how an owner debugs a poison message without redeploying.
 *
 * Guarantees: the message stays in the DLQ (it is held invisible while the DLQ is scanned for it,
 * then made visible again, as `dlq list` does); nothing is written to the cluster; the reconcile
 * sees the dead-lettered message itself as `ctx.message` (its reason, attempt, uid), so a
 * message about an object recreated since is reported `gone` exactly as the function would.
 * Output: the DLQ's record of why it failed, the reconcile's log lines, its result and what it
 * would change; exit codes as `operless preview`'s (0, 3, 1; 2 usage).
 */
import { previewObject } from '../../preview/run.ts';
import { previewExitCode, previewText } from '../../preview/report.ts';
import { UsageError, helpText, intOption, parseCommandArgs, type CommandSpec } from '../args.ts';
import { IMPERSONATION_OPTIONS, connectCluster, impersonationFrom } from '../cluster.ts';
import { PROJECT_OPTION, projectDir } from '../project-dir.ts';
import { TARGET_OPTIONS, requireField, resolveTarget, sqsClient } from '../target.ts';
import type { CommandResult } from './command.ts';
import { releaseDeadLetters, scanDeadLetters } from './dlq.ts';
import { controllerFor, projectControllers } from './preview.ts';

export const dlqReplaySpec: CommandSpec = {
  name: 'dlq replay',
  summary: "run one dead-lettered message through the project's current code, every write a dry run",
  usage: '<message id> [options]',
  details:
    'Finds the message in the DLQ (ids as `operless dlq list` prints them), leaves it there, and runs its\n' +
    "reconcile with the project's current controllers against the cluster, every write sent with\n" +
    "dryRun=All. Prints why it was dead-lettered, the reconcile's log lines, its result and what it would change.",
  options: {
    ...TARGET_OPTIONS,
    ...IMPERSONATION_OPTIONS,
    ...PROJECT_OPTION,
    limit: { type: 'string', description: 'Scan at most this many DLQ messages for the id', default: '1000', placeholder: 'n' },
  },
  examples: ['operless dlq replay 3f1c2a9e-…', 'operless dlq replay 3f1c2a9e-… --json'],
};

export async function dlqReplay(argv: string[]): Promise<CommandResult> {
  const args = parseCommandArgs(dlqReplaySpec, argv);
  if (args.values.help) return { output: helpText(dlqReplaySpec) };
  const [id, ...extra] = args.positionals;
  if (!id || extra.length > 0) throw new UsageError('name exactly one message id, as `operless dlq list` prints it');
  const limit = intOption(args.values, 'limit', 1, 100_000) ?? 1000;
  const target = resolveTarget(args);
  const dlqUrl = requireField(target, 'dlqUrl');
  const sqs = sqsClient(target);
  const entries = await scanDeadLetters(sqs, dlqUrl, limit);
  await releaseDeadLetters(sqs, dlqUrl, entries);
  const entry = entries.find((e) => e.messageId === id);
  if (!entry) throw new UsageError(`no message ${id} among the ${entries.length} in ${dlqUrl} (ids: \`operless dlq list\`)`);
  if (!entry.message) {
    return { output: `message ${id} is not a reconcile message, so no code runs for it: ${entry.error}\n`, exitCode: 1 };
  }
  const message = entry.message;
  const controller = controllerFor(await projectControllers(projectDir(args)), message);
  const cluster = await connectCluster(target, impersonationFrom(args));
  try {
    const preview = await previewObject(
      controller,
      { ...(message.namespace ? { namespace: message.namespace } : {}), name: message.name },
      { transport: cluster.transport, message, cluster: target.cluster },
    );
    const exitCode = previewExitCode([preview]);
    const dead = {
      messageId: entry.messageId,
      reason: entry.reason,
      error: entry.error,
      receiveCount: entry.receiveCount,
      ...(entry.failedAt ? { failedAt: entry.failedAt } : {}),
    };
    if (target.json) return { output: `${JSON.stringify({ exitCode, deadLetter: dead, preview }, null, 2)}\n`, exitCode };
    const lines = [
      `dead-lettered: ${entry.reason}${entry.failedAt ? ` at ${entry.failedAt}` : ''}: ${entry.error}`,
      `replayed with the current code (${message.reason}, attempt ${message.attempt}); the message stays in the DLQ; nothing was written.`,
      'log:',
      ...preview.logs.map((l) => `  ${l}`),
      previewText([preview]).trimEnd(),
      ...(preview.result.type === 'done' && preview.changes.length === 0
        ? ['the current code reconciles it with nothing to change: `operless dlq redrive` would now succeed.']
        : []),
    ];
    return { output: `${lines.join('\n')}\n`, exitCode };
  } finally {
    await cluster.close();
  }
}
