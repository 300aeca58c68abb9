/**
 * `operless replay`: replays an EventBridge archive (the forwarder's EventBridge sink, the
 * stack's `EventArchive`) into its bus for a time range, so the work queue's rule delivers
 * those changes again after an incident — `aws events start-replay` with the checks done first.
 *
 * Guarantees: the arguments are checked before any request (ARNs, ISO 8601 times, from before
 * to, to not in the future), each mistake one line naming the option; `--wait` polls the
 * replay until it ends or `--timeout` passes (bounded), and a replay that FAILED or was
 * CANCELLED exits 1 with its reason. The SDK's configuration chain applies (region,
 * credentials, AWS_ENDPOINT_URL_EVENTBRIDGE).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { DescribeReplayCommand, EventBridgeClient, StartReplayCommand, type StartReplayCommandInput } from '@aws-sdk/client-eventbridge';
import { helpText, intOption, parseCommandArgs, stringOption, UsageError, type CommandSpec } from '../args.ts';
import type { CommandResult } from './command.ts';

export const replaySpec: CommandSpec = {
  name: 'replay',
  summary: 'replay an EventBridge archive into its bus for a time range (the rules deliver the changes again)',
  usage: '--archive <arn> --bus <arn> --from <time> --to <time> [options]',
  details:
    "Times are ISO 8601 (2026-12-01T10:00:00Z). --rule limits the replay to those rules (e.g. the work queue's), else every rule on the bus receives the events again.",
  options: {
    archive: { type: 'string', description: 'The archive ARN (stack output EventArchiveArn)', placeholder: 'arn' },
    bus: { type: 'string', description: 'The bus ARN the archive belongs to (stack output EventBusArn)', placeholder: 'arn' },
    from: { type: 'string', description: 'Replay events from this time', placeholder: 'time' },
    to: { type: 'string', description: 'Replay events up to this time', placeholder: 'time' },
    rule: { type: 'string', multiple: true, description: 'Only to this rule (ARN; repeatable)', placeholder: 'arn' },
    name: { type: 'string', description: 'Replay name (default operless-<time>)', placeholder: 'name' },
    wait: { type: 'boolean', description: 'Wait until the replay ends' },
    timeout: { type: 'string', description: 'Seconds --wait waits at most', default: '600', placeholder: 's' },
    json: { type: 'boolean', description: 'Print JSON' },
  },
  examples: [
    'operless replay --archive arn:aws:events:eu-west-1:123456789012:archive/EventArchive-abc --bus arn:aws:events:eu-west-1:123456789012:event-bus/operless-prod --from 2026-12-01T10:00:00Z --to 2026-12-01T11:00:00Z --wait',
  ],
};

const ARCHIVE_ARN = /^arn:aws[a-z-]*:events:[a-z0-9-]+:\d{12}:archive\/[A-Za-z0-9._-]{1,48}$/;
const BUS_ARN = /^arn:aws[a-z-]*:events:[a-z0-9-]+:\d{12}:event-bus\/[A-Za-z0-9._/-]{1,256}$/;
const RULE_ARN = /^arn:aws[a-z-]*:events:[a-z0-9-]+:\d{12}:rule\/[A-Za-z0-9._/-]{1,256}$/;
const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/;

function arnOption(value: string | undefined, name: string, pattern: RegExp, what: string): string {
  if (value === undefined) throw new UsageError(`--${name} is required: ${what}. Run \`operless replay --help\` for usage.`);
  if (!pattern.test(value)) throw new UsageError(`--${name} must be ${what}, got ${JSON.stringify(value)}`);
  return value;
}

function timeOption(value: string | undefined, name: string): Date {
  if (value === undefined) throw new UsageError(`--${name} is required: an ISO 8601 time like 2026-12-01T10:00:00Z`);
  const at = new Date(value);
  if (!ISO_TIME.test(value) || Number.isNaN(at.getTime()))
    throw new UsageError(`--${name} must be an ISO 8601 time like 2026-12-01T10:00:00Z, got ${JSON.stringify(value)}`);
  return at;
}

/** The StartReplay input the options ask for, or a UsageError naming the option at fault. Pure. */
export function replayInput(values: Record<string, string | boolean | string[] | undefined>, now: number): StartReplayCommandInput {
  const archive = arnOption(stringOption(values, 'archive'), 'archive', ARCHIVE_ARN, 'an archive ARN (arn:aws:events:<region>:<account>:archive/<name>)');
  const bus = arnOption(stringOption(values, 'bus'), 'bus', BUS_ARN, 'an event bus ARN (arn:aws:events:<region>:<account>:event-bus/<name>)');
  const from = timeOption(stringOption(values, 'from'), 'from');
  const to = timeOption(stringOption(values, 'to'), 'to');
  if (from.getTime() >= to.getTime()) throw new UsageError(`--from (${from.toISOString()}) must be before --to (${to.toISOString()})`);
  if (to.getTime() > now) throw new UsageError(`--to (${to.toISOString()}) is in the future; EventBridge replays only what it archived`);
  const rules = (Array.isArray(values.rule) ? values.rule : []).map((r) =>
    arnOption(r, 'rule', RULE_ARN, 'a rule ARN (arn:aws:events:<region>:<account>:rule/<bus>/<name>)'),
  );
  const name =
    stringOption(values, 'name') ??
    `operless-${new Date(now)
      .toISOString()
      .replace(/[^0-9]/g, '')
      .slice(0, 14)}`;
  if (!/^[A-Za-z0-9._-]{1,64}$/.test(name)) throw new UsageError(`--name must be 1-64 letters, digits, ".", "_" or "-", got ${JSON.stringify(name)}`);
  return {
    ReplayName: name,
    EventSourceArn: archive,
    EventStartTime: from,
    EventEndTime: to,
    Destination: { Arn: bus, ...(rules.length > 0 ? { FilterArns: rules } : {}) },
  };
}

export async function replay(argv: string[], client?: EventBridgeClient): Promise<CommandResult> {
  const { values } = parseCommandArgs(replaySpec, argv);
  if (values.help) return { output: helpText(replaySpec) };
  const input = replayInput(values, Date.now());
  const timeoutSeconds = intOption(values, 'timeout', 1, 86_400) ?? 600;
  const events = client ?? new EventBridgeClient({});
  try {
    const started = await events.send(new StartReplayCommand(input));
    let state = started.State ?? 'STARTING';
    let reason: string | undefined;
    if (values.wait) {
      const deadline = Date.now() + timeoutSeconds * 1000;
      while (!['COMPLETED', 'FAILED', 'CANCELLED'].includes(state) && Date.now() < deadline) {
        await sleep(2000);
        const described = await events.send(new DescribeReplayCommand({ ReplayName: input.ReplayName }));
        state = described.State ?? state;
        reason = described.StateReason;
      }
    }
    const result = { replay: input.ReplayName, arn: started.ReplayArn, state, ...(reason ? { reason } : {}) };
    const failed = state === 'FAILED' || state === 'CANCELLED';
    const output = values.json ? `${JSON.stringify(result, null, 2)}\n` : `replay ${input.ReplayName}: ${state}${reason ? ` (${reason})` : ''}\n`;
    return { output, exitCode: failed ? 1 : 0 };
  } finally {
    if (!client) events.destroy();
  }
}
