/**
 * The intake (src/forwarder/intake.ts, beside the stage folders it joins: it imports source/,
 * route/ and sink/, and only forwarder.ts imports it): where the pipeline's stages meet. A watch stream's changes and lists are routed
 * (route/router.ts: predicates, owner mapping, the contract's check), turned into reconcile
 * messages and handed to the lane of their kind's queue (sink/lanes.ts); a resync's listed
 * primaries go to that lane's resync feed instead of the buffer.
 *
 * Guarantees:
 * - nothing is forwarded while this replica does not lead (`isLeading`);
 * - every request the contract refuses is dropped with one WARN line naming the object (its
 *   key and uid, the reason, the contract's words, the owner reference for a child; strings
 *   cut to 253 characters) and `events_dropped_total{reason}`, never passed on;
 * - a change that routes to nothing counts as filtered (`events_filtered_total`);
 * - the reverse index of related objects (route/related-index.ts) follows every primary
 *   stream's events and lists, whether or not this replica leads, before their routing — when
 *   a related watch is configured; without one nothing reads it and it stays empty (the
 *   watches are resolved once, before any stream starts, so it never misses a primary);
 * - a resync list forwards the primaries that vanished as `Deleted` at once and feeds the
 *   rest as `Resync` through the lane's feed (a newer resync of a stream replaces one in
 *   progress); a relist that is not a resync forwards only what changed; a first list nothing;
 * - backlog traffic — a resync's `Resync`s and what a relist found changed — goes to the kind's
 *   bulk lane (its queue's lane when it has no bulk queue); watch events and the `Deleted`s of
 *   a resync list go to its live lane (sink/lanes.ts).
 */
import { displayKey, newMessage, type ReconcileMessage } from '../contract/message.ts';
import type { Logger } from '../observability/log.ts';
import type { ForwarderMetrics } from './metrics.ts';
import { primaryKindKey, RelatedIndex } from './route/related-index.ts';
import { forwardRef, resyncRequest, resyncRouted, routeChange, type Drop, type ReconcileRequest } from './route/router.ts';
import type { ResolvedWatch } from './source/watches.ts';
import type { ObjectSnapshot } from './source/snapshot.ts';
import type { Change } from './source/store.ts';
import type { ListResult } from './source/watcher.ts';
import type { Lanes } from './sink/lanes.ts';

export interface IntakeOptions {
  readonly clusterId: string;
  readonly lanes: Lanes;
  /** Every resolved watch (the owner mapping looks primaries up in it). */
  readonly watches: () => readonly ResolvedWatch[];
  readonly isLeading: () => boolean;
  readonly metrics: ForwarderMetrics;
  readonly log: Logger;
  readonly now: () => number;
}

/** The reconcile message of a routed request, stamped `at`. Pure. */
export function messageOf(r: ReconcileRequest, at: number): ReconcileMessage {
  return newMessage(forwardRef(r), r.reason, at);
}

/** A value from an object for a log line: at most 253 characters (an owner reference's name is unbounded). Pure. */
export function clip(value: string): string {
  return value.length > 253 ? `${value.slice(0, 253)}…` : value;
}

export class Intake {
  readonly #o: IntakeOptions;
  /** The primaries by what related objects name them (fed by the primary streams; read by related changes). */
  readonly related = new RelatedIndex();

  constructor(options: IntakeOptions) {
    this.#o = options;
  }

  /** Whether the primaries are indexed: only related changes read the index. */
  #indexes(watch: ResolvedWatch): boolean {
    return watch.role === 'primary' && this.#o.watches().some((w) => w.role === 'related');
  }

  /** One watch event's change (of the stream `stream`). */
  change(watch: ResolvedWatch, change: Change, stream = ''): void {
    if (this.#indexes(watch)) this.related.apply(primaryKindKey(watch), stream, change);
    this.#route(watch, change);
  }

  /** One successful LIST of the stream `stream`. */
  list(watch: ResolvedWatch, result: ListResult, stream: string): void {
    if (this.#indexes(watch)) this.related.replace(primaryKindKey(watch), stream, result.listed);
    if (result.resync && watch.role === 'primary') {
      const deleted = result.changes
        .filter((c) => c.type === 'DELETED')
        .map((c) => ({ change: c, routed: routeChange(this.#o.clusterId, watch, c, this.#o.watches()) }));
      for (const { change, routed } of deleted) for (const drop of routed.dropped) this.#reportDrop(watch, change.current, drop);
      this.#forward(deleted.flatMap((d) => d.routed.forwards));
      this.#startResync(watch, stream, result.listed);
      return;
    }
    if (result.first) return; // the store was empty: nothing to compare against
    for (const change of result.changes) this.#route(watch, change, 'bulk');
  }

  /** Routes one change (a watch event, or one a relist found — `bulk` traffic: the index already holds that list). */
  #route(watch: ResolvedWatch, change: Change, traffic: 'live' | 'bulk' = 'live'): void {
    const { forwards, dropped } = routeChange(this.#o.clusterId, watch, change, this.#o.watches(), this.related);
    for (const drop of dropped) this.#reportDrop(watch, change.current, drop);
    if (forwards.length === 0 && dropped.length === 0) this.#o.metrics.eventsFiltered.inc({ kind: watch.kind });
    this.#forward(forwards, traffic);
  }

  #forward(requests: readonly ReconcileRequest[], traffic: 'live' | 'bulk' = 'live'): void {
    if (!this.#o.isLeading() || requests.length === 0) return;
    const at = this.#o.now();
    const messages = requests.map((r) => messageOf(r, at));
    for (const m of messages) this.#o.metrics.messagesEnqueued.inc({ kind: m.kind, reason: m.reason });
    this.#o.lanes.forward(messages, at, traffic);
  }

  /** Hands a stream's listed primaries to its lane's resync feed; objects no message can name are dropped here, never fed. */
  #startResync(watch: ResolvedWatch, stream: string, listed: readonly ObjectSnapshot[]): void {
    if (!this.#o.isLeading()) return;
    const { clusterId, metrics } = this.#o;
    const at = this.#o.now();
    const valid = listed.filter((snapshot) => {
      const { dropped } = resyncRouted(clusterId, watch, [snapshot]);
      for (const { object, drop } of dropped) this.#reportDrop(watch, object, drop);
      return dropped.length === 0;
    });
    metrics.messagesEnqueued.inc({ kind: watch.kind, reason: 'Resync' }, valid.length);
    this.#o.lanes.bulkLaneFor(watch).startResync(stream, valid, (snapshot) => messageOf(resyncRequest(clusterId, watch, snapshot), at), at);
  }

  /** A request the contract refuses: one WARN line naming the object, and the counter. */
  #reportDrop(watch: ResolvedWatch, object: ObjectSnapshot, drop: Drop): void {
    this.#o.metrics.eventsDropped.inc({ reason: drop.reason });
    this.#o.log.warn(
      drop.target === 'owner'
        ? 'change dropped: its controller owner reference names an object no reconcile message can name'
        : 'change dropped: the object has a name or namespace no reconcile message can carry',
      {
        key: displayKey({ kind: watch.kind, ...(object.namespace ? { namespace: object.namespace } : {}), name: clip(object.name) }),
        uid: object.uid,
        reason: drop.reason,
        error: drop.error,
        ...(drop.owner
          ? { owner: { apiVersion: clip(drop.owner.apiVersion), kind: clip(drop.owner.kind), name: clip(drop.owner.name), uid: clip(drop.owner.uid) } }
          : {}),
      },
    );
  }
}
