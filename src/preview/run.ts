/**
 * A preview of one object: the project's own controller reconciles the live object with a
 * client whose every write is a server-side dry run (kube/recording-transport.ts), and what it would have
 * changed is reported instead of made.
 *
 * Guarantees:
 * - Nothing is stored: the controller's writes (children, status, finalizers, deletes) carry
 *   `dryRun=All`; its Events are collected, not recorded; its follow-up (a requeue, a retry) is
 *   reported, not sent. `ctx.preview` is true, so the author can guard calls outside the
 *   cluster.
 * - It runs the reconcile the runtime runs (`reconcileKey`: the same steps, the same
 *   finalizer handling, the same pause), so what it reports is what a deployed function would
 *   do on this object now. Reads are live; a later read in the same reconcile does not see an
 *   earlier dry-run write (nothing was stored), which the runtime's own writes never rely on.
 * - Every change is compared against the live object: a child that would be created, changed
 *   (with the diff, server-set fields left out) or deleted, a status that would be written, a
 *   write the API server would refuse (an admission webhook, a policy, a CEL rule: with its
 *   message). An apply that would change nothing is not a change.
 * - Timers (`timers`) are not run — they run on their own ticks, not in a reconcile — but each
 *   declared one is reported, with whether this reconcile would start its chain (no live chain
 *   marked on the object: core/controller/timer.ts `timersToStart`).
 * - Never throws for the object's sake: a reconcile that throws reports the error; only a
 *   failed read of the live object for a diff is reported as the preview's own error.
 */
import { newMessage, type ReconcileMessage } from '../contract/message.ts';
import { createKubeClient } from '../kube/client.ts';
import { recordingTransport, type RecordedWrite } from '../kube/recording-transport.ts';
import { isNotFound } from '../kube/errors.ts';
import type { KubeTransport } from '../kube/transport.ts';
import type { EventRecorder, KubeObject } from '../kube/types.ts';
import type { Controller } from '../core/controller/controller.ts';
import { reconcileKey } from '../core/reconcile/reconciler.ts';
import { isTerminalError } from '../core/controller/errors.ts';
import { timersToStart } from '../core/controller/timer.ts';
import { createLogger } from '../observability/log.ts';
import { objectDiff, withoutServerFields, type DiffLine } from './diff.ts';

export interface PreviewTarget {
  readonly namespace?: string | undefined;
  readonly name: string;
}

export interface PreviewChange {
  readonly action: 'create' | 'change' | 'delete' | 'refused';
  /** The HTTP method of the write. */
  readonly method?: string | undefined;
  readonly apiVersion?: string | undefined;
  readonly kind?: string | undefined;
  readonly namespace?: string | undefined;
  readonly name?: string | undefined;
  /** `status` when the write was to the status subresource. */
  readonly subresource?: 'status' | undefined;
  /** The request path (no query), to tell writes apart when the object names nothing. */
  readonly path: string;
  readonly diff: readonly DiffLine[];
  /** For `refused`: what the API server answered. */
  readonly refusal?: { readonly status: number; readonly message: string } | undefined;
}

export interface PreviewEvent {
  readonly type: string;
  readonly reason: string;
  readonly note: string;
}

export type PreviewResult =
  | { readonly type: 'done' }
  | { readonly type: 'requeueAfter'; readonly seconds: number }
  | { readonly type: 'error'; readonly message: string; readonly terminal: boolean }
  | { readonly type: 'gone' }
  | { readonly type: 'paused' }
  | { readonly type: 'superseded' };

export interface ObjectPreview {
  readonly apiVersion: string;
  readonly kind: string;
  readonly namespace?: string | undefined;
  readonly name: string;
  readonly result: PreviewResult;
  readonly changes: readonly PreviewChange[];
  readonly events: readonly PreviewEvent[];
  /** The reconcile's own log lines (JSON), in order. */
  readonly logs: readonly string[];
  /** The controller's declared timers (not run by a preview), and whether this reconcile would start each one's chain. */
  readonly timers: readonly PreviewTimer[];
  /** A failure of the preview itself (not of the reconcile), e.g. a live object it could not read. */
  readonly previewError?: string | undefined;
}

export interface PreviewTimer {
  readonly name: string;
  readonly everySeconds: number;
  /** The object has no live chain of it (no mark ahead): the reconcile would send its first tick. */
  readonly wouldStart: boolean;
}

export interface PreviewOptions {
  /** The transport to the cluster (reads go through as they are). */
  readonly transport: KubeTransport;
  /** Resolves when a request may start: a `rateLimiter` shared by every object of the run. */
  readonly take?: (() => Promise<void>) | undefined;
  /** The message the reconcile sees (default: a `Resync` naming the object). */
  readonly message?: ReconcileMessage | undefined;
  readonly cluster?: string | undefined;
  readonly signal?: AbortSignal | undefined;
}

/** Previews `controller`'s reconcile of one object. */
export async function previewObject(controller: Controller<KubeObject>, target: PreviewTarget, options: PreviewOptions): Promise<ObjectPreview> {
  const kind = controller.kind;
  const writes: RecordedWrite[] = [];
  const transport = recordingTransport(options.transport, { dryRun: true, record: (w) => writes.push(w), ...(options.take ? { take: options.take } : {}) });
  const client = createKubeClient(transport, { fieldManager: controller.fieldManager });
  const events: PreviewEvent[] = [];
  const recorder: EventRecorder = {
    async record(_regarding, e) {
      events.push({ type: e.type, reason: e.reason, note: e.note });
    },
  };
  const logs: string[] = [];
  const reconcileId = `preview-${crypto.randomUUID()}`;
  const message =
    options.message ??
    newMessage(
      {
        cluster: options.cluster ?? 'preview',
        apiVersion: kind.apiVersion,
        kind: kind.kind,
        name: target.name,
        ...(target.namespace ? { namespace: target.namespace } : {}),
      },
      'Resync',
    );
  const log = createLogger({
    level: 'debug',
    write: (line) => logs.push(line),
    fields: { key: `${kind.kind}/${target.namespace ? `${target.namespace}/` : ''}${target.name}`, reconcileId, preview: true },
  });
  const ran = await reconcileKey(controller, message, {
    client,
    events: recorder,
    log,
    reconcileId,
    preview: true,
    signal: options.signal ?? new AbortController().signal,
  });
  const live = ran.object && ran.ending.type !== 'paused' && ran.ending.type !== 'gone' ? ran.object : undefined;
  const starting = live ? timersToStart(controller.timers, live, Date.now()) : [];
  const timers = controller.timers.map((t) => ({ name: t.name, everySeconds: t.everySeconds, wouldStart: starting.includes(t.name) }));
  const base = {
    apiVersion: kind.apiVersion,
    kind: kind.kind,
    ...(target.namespace ? { namespace: target.namespace } : {}),
    name: target.name,
    events,
    logs,
    timers,
  };
  let changes: PreviewChange[];
  try {
    changes = await changesOf(writes, options.transport, options.take);
  } catch (error) {
    return {
      ...base,
      result: resultOf(ran.ending),
      changes: [],
      previewError: `could not read a live object to compare with: ${error instanceof Error ? error.message : String(error)}`,
    };
  }
  return { ...base, result: resultOf(ran.ending), changes };
}

function resultOf(outcome: Awaited<ReturnType<typeof reconcileKey>>['ending']): PreviewResult {
  switch (outcome.type) {
    case 'result':
      return outcome.result.type === 'requeueAfter' ? { type: 'requeueAfter', seconds: outcome.result.seconds } : { type: 'done' };
    case 'gone':
      return { type: 'gone' };
    case 'paused':
      return { type: 'paused' };
    case 'superseded':
      return { type: 'superseded' };
    case 'error': {
      const error = outcome.error;
      const terminal = isTerminalError(error);
      return { type: 'error', message: error instanceof Error ? error.message : String(error), terminal };
    }
  }
}

interface Identity {
  readonly apiVersion?: string | undefined;
  readonly kind?: string | undefined;
  readonly namespace?: string | undefined;
  readonly name?: string | undefined;
}

/** Who a write is about: from the object when it says, else from its path (`…/namespaces/<ns>/<plural>/<name>`). */
function identityOf(object: unknown, objectPath: string): Identity {
  const o = (typeof object === 'object' && object !== null ? object : {}) as {
    apiVersion?: string;
    kind?: string;
    metadata?: { name?: string; namespace?: string };
  };
  const segments = objectPath.split('/');
  const fromPath = objectPath.match(/\/namespaces\/([^/]+)\//)?.[1];
  return { apiVersion: o.apiVersion, kind: o.kind ?? segments.at(-2), namespace: o.metadata?.namespace ?? fromPath, name: o.metadata?.name ?? segments.at(-1) };
}

/**
 * The changes a reconcile's writes would make, one per object and subresource (the last write
 * to it counts), each compared with the live object read now. Writes to one object are folded
 * in the order they were made.
 */
async function changesOf(writes: readonly RecordedWrite[], transport: KubeTransport, take?: () => Promise<void>): Promise<PreviewChange[]> {
  const last = new Map<string, RecordedWrite>();
  for (const w of writes) {
    const target = w.method === 'POST' ? `${w.path}/${(w.body as { metadata?: { name?: string } } | undefined)?.metadata?.name ?? ''}` : w.path;
    last.delete(target); // re-insert: the map keeps the order of each object's last write
    last.set(target, w);
  }
  const changes: PreviewChange[] = [];
  for (const [target, w] of last) {
    const status = target.endsWith('/status');
    const objectPath = status ? target.slice(0, -'/status'.length) : target;
    const subresource = status ? { subresource: 'status' as const } : {};
    if (w.refused) {
      changes.push({ action: 'refused', method: w.method, ...identityOf(w.body, objectPath), ...subresource, path: w.path, diff: [], refusal: w.refused });
      continue;
    }
    if (w.method === 'DELETE') {
      changes.push({ action: 'delete', ...identityOf(undefined, objectPath), ...subresource, path: w.path, diff: [] });
      continue;
    }
    await take?.(); // the diffs' reads share the run's rate bound
    const live = await readLive(transport, objectPath);
    const after = withoutServerFields(w.response, status);
    if (!live) {
      changes.push({ action: 'create', ...identityOf(w.response, objectPath), ...subresource, path: w.path, diff: objectDiff(undefined, after) });
      continue;
    }
    const diff = status
      ? objectDiff((withoutServerFields(live, true) as { status?: unknown }).status, (after as { status?: unknown }).status).map((l) => ({
          ...l,
          path: l.path ? `status.${l.path}` : 'status',
        }))
      : objectDiff(withoutServerFields(live, false), after);
    if (diff.length > 0) changes.push({ action: 'change', ...identityOf(w.response, objectPath), ...subresource, path: w.path, diff });
  }
  return changes;
}

async function readLive(reader: KubeTransport, path: string): Promise<unknown> {
  try {
    return (await reader.request({ method: 'GET', path })).body;
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
}
