/**
 * Kubernetes Events (`events.k8s.io/v1`) recorded on an object, as `kubectl describe` and
 * `kubectl events` users expect — without floods, even from stateless functions:
 *
 * - an Event's name is derived from (object uid, type, reason, action, note), so the same
 *   occurrence from any function instance addresses the same Event object;
 * - the first occurrence creates it; a repeat (409 AlreadyExists) bumps its
 *   `series.count` and `series.lastObservedTime` instead of creating another Event;
 * - within one warm function instance, repeats of one Event within `repeatWindowMs` are
 *   counted locally and folded into the next series update (at most one write per window).
 *
 * Recording is best effort, like client-go's recorder: a failure is logged and never fails
 * the reconcile. Cluster-scoped objects get their Events in the `default` namespace.
 */
import { EVENTS } from './kinds.ts';
import { createHash, randomBytes } from 'node:crypto';
import { errorMessage, silentLogger, type Logger } from '../observability/log.ts';
import type { EventRecorder, EventType, KubeClient, KubeObject } from './types.ts';
import { isKubeApiError } from './errors.ts';
import { microTime } from './time.ts';

const MAX_NOTE = 1024;
const MAX_REASON = 128;

export interface RecorderOptions {
  readonly client: KubeClient;
  /** `reportingController`, e.g. `cache.example.com/memcached-operator`. */
  readonly controller: string;
  /** `reportingInstance`, e.g. the function name and its log stream. */
  readonly instance?: string;
  readonly log?: Logger;
  readonly repeatWindowMs?: number;
  readonly now?: () => Date;
}

interface Pending {
  lastWriteAt: number;
  unwritten: number;
}

/** Kubernetes MicroTime (time.ts), re-exported where Events were the first to need it. */
export { microTime };

/** Deterministic Event name for one kind of occurrence on one object. */
export function eventName(regarding: KubeObject, event: { type: EventType; reason: string; action: string; note: string }): string {
  const hash = createHash('sha256')
    .update([regarding.metadata.uid ?? '', regarding.kind, event.type, event.reason, event.action, event.note].join('\u0000'))
    .digest('hex')
    .slice(0, 16);
  const base = regarding.metadata.name.slice(0, 253 - 17);
  return `${base}.${hash}`;
}

/** The Event object for the first occurrence. Pure (given `now` and `instance`). */
export function buildEvent(
  regarding: KubeObject,
  event: { type: EventType; reason: string; action: string; note: string },
  options: { controller: string; instance: string; now: Date },
): KubeObject {
  const namespace = regarding.metadata.namespace ?? 'default';
  return {
    apiVersion: EVENTS.apiVersion,
    kind: EVENTS.kind,
    metadata: { name: eventName(regarding, event), namespace },
    eventTime: microTime(options.now),
    reportingController: options.controller,
    reportingInstance: options.instance.slice(0, 128),
    action: event.action.slice(0, MAX_REASON),
    reason: event.reason.slice(0, MAX_REASON),
    note: event.note.length > MAX_NOTE ? `${event.note.slice(0, MAX_NOTE - 1)}…` : event.note,
    type: event.type,
    regarding: {
      apiVersion: regarding.apiVersion,
      kind: regarding.kind,
      name: regarding.metadata.name,
      ...(regarding.metadata.namespace ? { namespace: regarding.metadata.namespace } : {}),
      ...(regarding.metadata.uid ? { uid: regarding.metadata.uid } : {}),
      ...(regarding.metadata.resourceVersion ? { resourceVersion: regarding.metadata.resourceVersion } : {}),
    },
  };
}

/** Process-wide memory of recent writes, so repeats across warm invocations are folded too. */
const recent = new Map<string, Pending>();
const MAX_REMEMBERED = 1000;

export function createEventRecorder(options: RecorderOptions): EventRecorder {
  const log = options.log ?? silentLogger;
  const now = options.now ?? (() => new Date());
  const window = options.repeatWindowMs ?? 30_000;
  const instance = options.instance ?? `${process.env.AWS_LAMBDA_FUNCTION_NAME ?? 'operless'}-${randomBytes(4).toString('hex')}`;
  return {
    async record(regarding, event) {
      const at = now();
      const body = buildEvent(regarding, event, { controller: options.controller, instance, now: at });
      const name = body.metadata.name;
      const namespace = body.metadata.namespace as string;
      const memoKey = `${namespace}/${name}`;
      const memo = recent.get(memoKey);
      if (memo && at.getTime() - memo.lastWriteAt < window) {
        memo.unwritten += 1;
        return;
      }
      try {
        try {
          await options.client.create(EVENTS, body);
          remember(memoKey, { lastWriteAt: at.getTime(), unwritten: 0 });
          return;
        } catch (err) {
          if (!(isKubeApiError(err) && err.status === 409)) throw err;
        }
        const live = await options.client.get(EVENTS, name, namespace);
        const series = (live?.series ?? undefined) as { count?: number } | undefined;
        const previous = series?.count ?? 1;
        const count = previous + 1 + (memo?.unwritten ?? 0);
        await options.client.mergePatch(EVENTS, name, namespace, {
          series: { count, lastObservedTime: microTime(at) },
        });
        remember(memoKey, { lastWriteAt: at.getTime(), unwritten: 0 });
      } catch (err) {
        log.warn('could not record a Kubernetes Event (the reconcile goes on)', {
          eventReason: event.reason,
          eventType: event.type,
          error: errorMessage(err),
        });
      }
    },
  };
}

function remember(key: string, value: Pending): void {
  recent.delete(key);
  recent.set(key, value);
  if (recent.size > MAX_REMEMBERED) {
    const oldest = recent.keys().next().value;
    if (oldest !== undefined) recent.delete(oldest);
  }
}

/** Forget the in-memory repeat window (tests). */
export function resetEventMemory(): void {
  recent.clear();
}
