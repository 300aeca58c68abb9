/**
 * `operless dlq list | redrive`: inspect and replay the dead-letter queue.
 *
 * Listing holds the messages invisible while it scans (so each is seen once), then makes
 * them visible again: nothing is removed. Redrive sends each selected body back to the work
 * queue with `attempt` reset to 0 (a fresh start for its retries) and deletes it from the DLQ
 * only after that send succeeded, so a failure midway loses nothing: the message is either
 * still in the DLQ or already back in the work queue (at worst in both — a duplicate, which
 * level-based reconciles tolerate). The send goes through the queue port, so a FIFO work queue
 * (per-key ordering) gets the key as message group. On a FIFO DLQ, SQS holds a key's later
 * messages while its first is held by the scan: a run sees one message per key; run again.
 */
import { ChangeMessageVisibilityBatchCommand, DeleteMessageBatchCommand, ReceiveMessageCommand, type Message, type SQSClient } from '@aws-sdk/client-sqs';
import { DLQ_ATTRIBUTE_ERROR, DLQ_ATTRIBUTE_FAILED_AT, DLQ_ATTRIBUTE_REASON } from '../../contract/dlq.ts';
import { decodeMessage, displayKey, encodeMessage, type ReconcileMessage } from '../../contract/message.ts';
import { UsageError, helpText, intOption, parseCommandArgs, type CommandSpec } from '../args.ts';
import { TARGET_OPTIONS, requireField, resolveTarget, sqsClient } from '../target.ts';
import { createSqsSender } from '../../queue/sqs.ts';
import type { CommandResult } from './command.ts';

export interface DeadLetterEntry {
  readonly messageId: string;
  readonly receiptHandle: string;
  readonly body: string;
  /** Why it is here: the runtime's reason, or SQS's own redrive. */
  readonly reason: string;
  readonly error: string;
  readonly failedAt?: string;
  readonly sentAt?: string;
  readonly receiveCount: number;
  readonly message?: ReconcileMessage;
}

export const dlqListSpec: CommandSpec = {
  name: 'dlq list',
  summary: 'show the messages in the dead-letter queue with their failure reasons',
  usage: '[options]',
  options: { ...TARGET_OPTIONS, limit: { type: 'string', description: 'At most this many messages', default: '100', placeholder: 'n' } },
  examples: ['operless dlq list', 'operless dlq list --json --dlq-url https://sqs.eu-west-1.amazonaws.com/123456789012/operless-memcached-dev-dlq'],
};

export const dlqRedriveSpec: CommandSpec = {
  name: 'dlq redrive',
  summary: 'move dead-lettered messages back to the work queue',
  usage: '[--filter <field>=<value>]... [--dry-run] [options]',
  details:
    'Filters (all must match): reason=<RetriesExhausted|TerminalError|InvalidMessage|UnknownKind|UnknownCluster|UnknownNamespace|maxReceiveCount|AsyncInvokeFailed>,\n' +
    'kind=<Kind>, namespace=<ns>, name=<name>, key=<substring of Kind/namespace/name>.\n' +
    'Messages that are not valid reconcile messages are never redriven (they would come straight back).',
  options: {
    ...TARGET_OPTIONS,
    filter: { type: 'string', multiple: true, description: 'Only messages matching <field>=<value> (repeatable)', placeholder: 'f=v' },
    'dry-run': { type: 'boolean', description: 'Show what would be redriven; change nothing' },
    limit: { type: 'string', description: 'At most this many messages', default: '1000', placeholder: 'n' },
  },
  examples: ['operless dlq redrive --dry-run', 'operless dlq redrive --filter reason=RetriesExhausted --filter kind=Memcached'],
};

const SCAN_VISIBILITY_SECONDS = 60;

/** Receives up to `limit` DLQ messages, keeping them invisible until `release` is called. */
export async function scanDeadLetters(sqs: SQSClient, dlqUrl: string, limit: number): Promise<DeadLetterEntry[]> {
  const entries: DeadLetterEntry[] = [];
  const seen = new Set<string>();
  while (entries.length < limit) {
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: dlqUrl,
        MaxNumberOfMessages: Math.min(10, limit - entries.length),
        VisibilityTimeout: SCAN_VISIBILITY_SECONDS,
        WaitTimeSeconds: 0,
        MessageSystemAttributeNames: ['All'],
        MessageAttributeNames: ['All'],
      }),
    );
    const fresh = Messages.filter((m) => m.MessageId && !seen.has(m.MessageId));
    if (fresh.length === 0) break;
    for (const m of fresh) {
      seen.add(m.MessageId!);
      entries.push(toEntry(m));
    }
  }
  return entries;
}

/** Reason of a record Lambda itself wrote after an asynchronous invocation failed its retries (the scheduled resync's `onError`). */
export const ASYNC_INVOKE_FAILED = 'AsyncInvokeFailed';

export function toEntry(m: Message): DeadLetterEntry {
  const attr = (name: string) => m.MessageAttributes?.[name]?.StringValue;
  const body = m.Body ?? '';
  const decoded = decodeMessage(body);
  const sent = m.Attributes?.SentTimestamp;
  // Lambda's own DLQ record: the original event as body, RequestID/ErrorCode/ErrorMessage as attributes.
  const lambdaError =
    attr(DLQ_ATTRIBUTE_REASON) === undefined && attr('RequestID') !== undefined ? (attr('ErrorMessage') ?? attr('ErrorCode') ?? '') : undefined;
  return {
    messageId: m.MessageId ?? '',
    receiptHandle: m.ReceiptHandle ?? '',
    body,
    reason: attr(DLQ_ATTRIBUTE_REASON) ?? (lambdaError !== undefined ? ASYNC_INVOKE_FAILED : 'maxReceiveCount'),
    error:
      attr(DLQ_ATTRIBUTE_ERROR) ??
      (lambdaError !== undefined ? `asynchronous invocation failed after Lambda's retries (request ${attr('RequestID')}): ${lambdaError}` : undefined) ??
      (decoded.ok ? "exceeded the queue's maxReceiveCount (the function failed or timed out on every delivery)" : decoded.error),
    ...(attr(DLQ_ATTRIBUTE_FAILED_AT) ? { failedAt: attr(DLQ_ATTRIBUTE_FAILED_AT) } : {}),
    ...(sent ? { sentAt: new Date(Number(sent)).toISOString() } : {}),
    receiveCount: Number(m.Attributes?.ApproximateReceiveCount ?? '0'),
    ...(decoded.ok ? { message: decoded.message } : {}),
  };
}

export async function releaseDeadLetters(sqs: SQSClient, dlqUrl: string, entries: readonly DeadLetterEntry[]): Promise<void> {
  for (let i = 0; i < entries.length; i += 10) {
    const chunk = entries.slice(i, i + 10);
    await sqs.send(
      new ChangeMessageVisibilityBatchCommand({
        QueueUrl: dlqUrl,
        Entries: chunk.map((e, j) => ({ Id: String(j), ReceiptHandle: e.receiptHandle, VisibilityTimeout: 0 })),
      }),
    );
  }
}

/** Parses `--filter field=value` flags into a predicate; unknown fields are a usage error. */
export function parseFilters(raw: readonly string[]): (entry: DeadLetterEntry) => boolean {
  const checks = raw.map((text) => {
    const eq = text.indexOf('=');
    if (eq <= 0) throw new UsageError(`--filter "${text}" must look like <field>=<value>, e.g. reason=RetriesExhausted`);
    const field = text.slice(0, eq);
    const value = text.slice(eq + 1);
    switch (field) {
      case 'reason':
        return (e: DeadLetterEntry) => e.reason === value;
      case 'kind':
        return (e: DeadLetterEntry) => e.message?.kind === value;
      case 'namespace':
        return (e: DeadLetterEntry) => e.message?.namespace === value;
      case 'name':
        return (e: DeadLetterEntry) => e.message?.name === value;
      case 'key':
        return (e: DeadLetterEntry) => e.message !== undefined && displayKey(e.message).includes(value);
      default:
        throw new UsageError(`--filter field "${field}" is not one of reason, kind, namespace, name, key`);
    }
  });
  return (entry) => checks.every((check) => check(entry));
}

export async function dlqList(argv: string[]): Promise<CommandResult> {
  const args = parseCommandArgs(dlqListSpec, argv);
  if (args.values.help) return { output: helpText(dlqListSpec) };
  const target = resolveTarget(args);
  const dlqUrl = requireField(target, 'dlqUrl');
  const sqs = sqsClient(target);
  const entries = await scanDeadLetters(sqs, dlqUrl, intOption(args.values, 'limit', 1, 100_000) ?? 100);
  await releaseDeadLetters(sqs, dlqUrl, entries);
  if (target.json)
    return {
      output: `${JSON.stringify(
        entries.map(({ receiptHandle: _r, ...rest }) => rest),
        null,
        2,
      )}\n`,
    };
  if (entries.length === 0) return { output: `The dead-letter queue is empty (${dlqUrl}).\n` };
  const rows = entries.map((e) => [e.message ? displayKey(e.message) : '(invalid message)', e.reason, e.failedAt ?? e.sentAt ?? '', e.error]);
  return { output: `${table(['OBJECT', 'REASON', 'FAILED AT', 'ERROR'], rows)}\n${entries.length} message(s) in ${dlqUrl}\n` };
}

/**
 * The message a redrive sends for a dead-lettered `message`: a fresh start (`attempt` 0, due
 * now: no `notBefore`), and a `Requeue` becomes a `Retry`. A requeue is the one message
 * per-key mode may acknowledge without a reconcile (a later requeue replaced it,
 * core/per-key/requeue-merge.ts), and the operator who redrives it asks for a reconcile. Pure.
 */
export function redriveMessage(message: ReconcileMessage): ReconcileMessage {
  const { notBefore: _n, ...rest } = message;
  return { ...rest, attempt: 0, ...(message.reason === 'Requeue' ? { reason: 'Retry' as const } : {}) };
}

export async function dlqRedrive(argv: string[]): Promise<CommandResult> {
  const args = parseCommandArgs(dlqRedriveSpec, argv);
  if (args.values.help) return { output: helpText(dlqRedriveSpec) };
  const filters = (args.values.filter as string[] | undefined) ?? [];
  const matches = parseFilters(filters);
  const target = resolveTarget(args);
  const dlqUrl = requireField(target, 'dlqUrl');
  const queueUrl = requireField(target, 'queueUrl');
  const dryRun = args.values['dry-run'] === true;
  const sqs = sqsClient(target);
  // The queue port: to a FIFO work queue (per-key ordering) it adds the key's group.
  const sender = createSqsSender(sqs);
  const entries = await scanDeadLetters(sqs, dlqUrl, intOption(args.values, 'limit', 1, 100_000) ?? 1000);
  const selected = entries.filter((e) => e.message !== undefined && matches(e));
  const skippedInvalid = entries.filter((e) => e.message === undefined && matches(e)).length;
  const redriven: DeadLetterEntry[] = [];
  const failed: { entry: DeadLetterEntry; error: string }[] = [];
  if (!dryRun) {
    for (const entry of selected) {
      try {
        await sender.send(queueUrl, { body: encodeMessage(redriveMessage(entry.message!)) });
        await sqs.send(new DeleteMessageBatchCommand({ QueueUrl: dlqUrl, Entries: [{ Id: '0', ReceiptHandle: entry.receiptHandle }] }));
        redriven.push(entry);
      } catch (err) {
        failed.push({ entry, error: (err as Error).message });
      }
    }
  }
  const moved = new Set(redriven.map((e) => e.messageId));
  await releaseDeadLetters(
    sqs,
    dlqUrl,
    entries.filter((e) => !moved.has(e.messageId)),
  );
  const summary = {
    dryRun,
    scanned: entries.length,
    selected: selected.length,
    redriven: redriven.length,
    failed: failed.map((f) => ({ messageId: f.entry.messageId, error: f.error })),
    skippedInvalid,
    objects: selected.map((e) => displayKey(e.message!)),
  };
  if (target.json) return { output: `${JSON.stringify(summary, null, 2)}\n`, exitCode: failed.length > 0 ? 1 : 0 };
  const lines = [
    dryRun
      ? `Would redrive ${selected.length} of ${entries.length} message(s) to ${queueUrl}:`
      : `Redrove ${redriven.length} of ${entries.length} message(s) to ${queueUrl}:`,
    ...summary.objects.map((o) => `  ${o}`),
  ];
  if (skippedInvalid > 0)
    lines.push(`Skipped ${skippedInvalid} invalid message(s): they are not reconcile messages and would fail again. Inspect them with \`operless dlq list\`.`);
  for (const f of failed) lines.push(`Failed to redrive ${f.entry.messageId}: ${f.error} (it stays in the DLQ)`);
  return { output: `${lines.join('\n')}\n`, exitCode: failed.length > 0 ? 1 : 0 };
}

export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => Math.min((r[i] ?? '').length, 80))));
  const fmt = (r: readonly string[]) => r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ');
  return [fmt(header), ...rows.map(fmt)].join('\n');
}
