/**
 * The watch stream: list, then watch from the list's resourceVersion with bookmarks, for
 * one kind (in one namespace or all). It owns every way a watch can go wrong instead of
 * trusting a client library to recover, with client-go's reflector's rules:
 * - the server closes the stream (its `timeoutSeconds`, an API server restart) → resume
 *   from the last resourceVersion seen (events or bookmarks) at once, with backoff only if
 *   the server keeps closing it at once;
 * - 410 Gone (history compacted), as HTTP status or in-stream ERROR → relist, and report
 *   only what differs from the store (no re-flood);
 * - the server is behind the resourceVersion we resume from (etcd restored from a backup):
 *   a 504 "Too large resource version", or — what kube-apiserver actually does for a plain
 *   watch — a watch that stays silent until its timeout, after which one `limit=1` read shows
 *   the server's resourceVersion below ours → relist (a consistent read from etcd), with
 *   backoff, instead of resuming from that resourceVersion forever;
 * - silence longer than `silenceTimeoutMs` (a half-open connection) → abort and resume. The
 *   stream asks the server to close every watch inside that window (`watchTimeoutSeconds`),
 *   so a healthy idle watch (which may get no bookmark at all) is closed by the server
 *   before the silence timer could fire: a silence restart means a dead connection;
 * - 404 from LIST or WATCH (the kind is not served: its CRD is not installed yet, or was
 *   deleted) → the explicit `waiting` phase: one WARN naming the reason, then a LIST with the
 *   stream's backoff until the kind is served again, each failed poll at DEBUG (no error
 *   storm); the LIST that succeeds is the stream's list (its changes against the store are
 *   reported, so objects deleted with the CRD are reported deleted) and the stream watches
 *   again, logged at INFO. No restart of anything; the other streams never notice;
 * - any other error (network, 403, 5xx) → back off with jitter and try again, forever,
 *   logging what happened and what to do.
 * A resync (`requestResync`) aborts the watch and lists at once; one requested while a LIST
 * is in flight lists again right after it; one whose LIST fails stays requested.
 *
 * A watch that reads nothing beyond metadata (`ResolvedWatch.objectFields` empty, see
 * resources.ts) lists and watches as `PartialObjectMetadata`: the server sends metadata
 * only, and the snapshot (snapshot.ts) keeps a few facts of it.
 *
 * A LIST page is read item by item as it streams in (`KubeApi.listItems`): each item becomes
 * its snapshot and is dropped, so the memory a LIST takes is the snapshots plus one object,
 * whatever the objects hold (300 ConfigMaps of 900 KB do not sit in memory at once); a watch
 * of whole objects lists in pages of at most `FULL_OBJECT_PAGE_LIMIT`.
 *
 * The decisions are pure: `classifyWatchEnd` (what an error or ERROR event means) and `step`
 * (what the stream does after each attempt); the class is the I/O loop around them, an
 * explicit `StreamPhase` and nothing thrown for control flow.
 *
 * Guarantees: events are delivered in the order the server sent them; after a successful
 * list, `onList` sees the complete set of changes against the store; `whenSynced`
 * resolves after the first successful list, `whenSettled` after it or once the stream first
 * waits for its kind to be served (whichever comes first); `state` says where the stream
 * is and `onState` hears every change of it; `stop()` ends the loop and the connection at
 * once, whatever the stream was doing (listing, watching, backing off).
 */
import { errorMessage, type Logger } from '../../observability/log.ts';
import { Backoff, pause } from '../../retry/backoff.ts';
import { KubeApiError, PARTIAL_METADATA_LIST, PARTIAL_METADATA_WATCH, type KubeApi } from '../../kube/api.ts';
import { collectionPath } from '../../kube/paths.ts';
import type { WatchEvent } from '../../kube/transport.ts';
import type { ForwarderMetrics } from '../metrics.ts';
import type { ResolvedWatch } from './watches.ts';
import { snapshotOf, type ObjectSnapshot } from './snapshot.ts';
import { SnapshotStore, type Change, type ChangeType } from './store.ts';

export interface ListResult {
  readonly changes: Change[];
  readonly listed: ObjectSnapshot[];
  /**
   * The first list of this stream (the store was empty by construction). A list that ends a
   * wait for the kind to be served is never first: the kind was not served when the stream
   * began, so every object it finds was created since and is a change to forward.
   */
  readonly first: boolean;
  /** A resync was requested: forward every listed primary. */
  readonly resync: boolean;
  /** The list's resourceVersion: every change up to it is in `listed` (the warm standby's journal starts there). */
  readonly resourceVersion: string;
}

export interface WatchStreamOptions {
  readonly api: KubeApi;
  readonly watch: ResolvedWatch;
  /** Namespace to watch; undefined = all namespaces (or a cluster-scoped kind). */
  readonly namespace?: string;
  readonly silenceTimeoutMs: number;
  /** The longest `timeoutSeconds` asked of the server; capped by `watchTimeoutSeconds` below the silence timeout. */
  readonly serverTimeoutSeconds: number;
  readonly backoffInitialMs: number;
  readonly backoffMaxMs: number;
  readonly listPageSize: number;
  readonly onList: (result: ListResult) => void;
  readonly onChange: (change: Change) => void;
  readonly metrics: ForwarderMetrics;
  readonly log: Logger;
  /** Request a full resync on the first list (forward every primary). */
  readonly resyncFirstList: boolean;
}

/**
 * The `timeoutSeconds` a watch asks for: the configured server timeout, but always inside the
 * silence timeout by a margin (a fifth of it, at least 1 s), so that the server — which sends
 * no bookmark on an idle watch of a kind it saw no event of — closes a healthy watch before
 * the silence timer fires. Pure.
 */
export function watchTimeoutSeconds(serverTimeoutSeconds: number, silenceTimeoutMs: number): number {
  const silenceSeconds = Math.floor(silenceTimeoutMs / 1000);
  const margin = Math.max(1, Math.ceil(silenceSeconds / 5));
  return Math.max(1, Math.min(serverTimeoutSeconds, silenceSeconds - margin));
}

/**
 * Items per LIST page at most for a watch the server sends whole objects to (`objectFields`
 * not empty: a related ConfigMap or Secret, a primary whose triggers read its status): an
 * object may be up to about 1.5 MiB (etcd's request limit), so a page is at most about
 * 75 MiB on the wire — what one request moves under its 60 s deadline and what the API
 * server holds to answer it. The forwarder's own memory does not depend on the page size:
 * it reads every page item by item (`KubeApi.listItems`).
 */
export const FULL_OBJECT_PAGE_LIMIT = 50;

/** The page size of a watch's LISTs: the configured one, at most `FULL_OBJECT_PAGE_LIMIT` for whole objects. Pure. */
export function listPageLimit(watch: Pick<ResolvedWatch, 'objectFields'>, configured: number): number {
  return watch.objectFields.length > 0 ? Math.min(configured, FULL_OBJECT_PAGE_LIMIT) : configured;
}

/** Why a LIST is made. */
export type ListCause = 'initial' | 'gone' | 'too-large' | 'resync' | 'retry';

/**
 * Where a stream is: about to list, about to watch from a resourceVersion, or waiting for its
 * kind to be served (a 404: the CRD is not installed, or was deleted), polling with a LIST.
 */
export type StreamPhase =
  | { readonly phase: 'list'; readonly cause: ListCause }
  | { readonly phase: 'watch'; readonly resourceVersion: string }
  | { readonly phase: 'waiting' };

/** What a stream reports of itself (the `operless_forwarder_watch_streams` gauge): not listed yet, waiting for its kind, watching. */
export type StreamState = 'listing' | 'waiting' | 'watching';

/** How one attempt (a LIST, or one watch connection) ended. */
export type AttemptOutcome =
  | { readonly kind: 'listed'; readonly resourceVersion: string }
  | { readonly kind: 'list-failed'; readonly error: unknown; readonly cause: ListCause }
  /** A LIST or WATCH answered 404: the kind is not served (its CRD is missing). */
  | { readonly kind: 'not-served'; readonly error: unknown }
  /** The server ended the stream cleanly; `quick` when within a second of opening it. */
  | { readonly kind: 'closed'; readonly resourceVersion: string; readonly quick: boolean }
  | { readonly kind: 'silence'; readonly resourceVersion: string }
  | { readonly kind: 'gone'; readonly resourceVersion: string }
  | { readonly kind: 'too-large'; readonly resourceVersion: string }
  /** The watch was aborted because a resync was requested. */
  | { readonly kind: 'resync'; readonly resourceVersion: string }
  | { readonly kind: 'error'; readonly resourceVersion: string; readonly error: unknown; readonly status?: number };

/** What the stream does next. */
export interface Step {
  readonly next: StreamPhase;
  /** Wait (the stream's backoff) before the next attempt. */
  readonly backoff: boolean;
}

/**
 * The stream's decision after an attempt. `resyncPending`: a resync was requested that no
 * successful LIST has served yet. Pure.
 */
export function step(outcome: AttemptOutcome, resyncPending: boolean): Step {
  switch (outcome.kind) {
    case 'listed':
      // A resync requested while the LIST was in flight lists again at once.
      return resyncPending
        ? { next: { phase: 'list', cause: 'resync' }, backoff: false }
        : { next: { phase: 'watch', resourceVersion: outcome.resourceVersion }, backoff: false };
    case 'list-failed':
      return { next: { phase: 'list', cause: outcome.cause === 'initial' ? 'initial' : 'retry' }, backoff: true };
    case 'not-served':
      // Polled with the stream's backoff; the LIST that succeeds is the stream's list (any resync pending is served by it).
      return { next: { phase: 'waiting' }, backoff: true };
    case 'gone':
      return { next: { phase: 'list', cause: 'gone' }, backoff: false };
    case 'too-large':
      // client-go: relist from etcd (no resourceVersion); backoff so a server that stays behind is not hammered.
      return { next: { phase: 'list', cause: 'too-large' }, backoff: true };
    case 'resync':
      return { next: { phase: 'list', cause: 'resync' }, backoff: false };
    case 'closed':
      if (resyncPending) return { next: { phase: 'list', cause: 'resync' }, backoff: false };
      return { next: { phase: 'watch', resourceVersion: outcome.resourceVersion }, backoff: outcome.quick };
    case 'silence':
      if (resyncPending) return { next: { phase: 'list', cause: 'resync' }, backoff: false };
      return { next: { phase: 'watch', resourceVersion: outcome.resourceVersion }, backoff: false };
    case 'error':
      return { next: resyncPending ? { phase: 'list', cause: 'resync' } : { phase: 'watch', resourceVersion: outcome.resourceVersion }, backoff: true };
  }
}

/** The parts of a Kubernetes `Status` (an error body or an ERROR event's object) that decide. */
export interface StatusLike {
  readonly code?: number;
  readonly reason?: string;
  readonly message?: string;
  readonly details?: { readonly causes?: readonly { readonly type?: string; readonly message?: string }[] };
}

/**
 * What a failed watch means (client-go's isExpiredError / isTooLargeResourceVersionError):
 * 410 (Expired/Gone) → `gone`; a 504 whose cause is ResourceVersionTooLarge or whose message
 * says "Too large resource version" → `too-large`; anything else → `error`. Pure.
 */
export function classifyWatchEnd(status: StatusLike): 'gone' | 'too-large' | 'error' {
  if (status.code === 410 || status.reason === 'Expired' || status.reason === 'Gone') return 'gone';
  const tooLarge =
    (status.details?.causes ?? []).some((c) => c.type === 'ResourceVersionTooLarge' || c.message === 'Too large resource version') ||
    (status.message ?? '').includes('Too large resource version');
  if (tooLarge && (status.code === 504 || status.code === undefined || status.reason === 'Timeout')) return 'too-large';
  return 'error';
}

/**
 * Whether the server's current resourceVersion is behind the one a watch resumes from — the
 * state after etcd was restored from a backup, in which kube-apiserver accepts the watch and
 * sends nothing, ever (no event, no bookmark, no error). resourceVersions are opaque to
 * clients; this compares them only when both are the decimal etcd revisions every
 * etcd-backed API server serves, and says false otherwise. Pure.
 */
export function serverBehind(resumeFrom: string, serverCurrent: string): boolean {
  if (!/^\d+$/.test(resumeFrom) || !/^\d+$/.test(serverCurrent)) return false;
  return BigInt(serverCurrent) < BigInt(resumeFrom);
}

/** Whether a failed LIST or WATCH means the kind is not served (404: no such resource, e.g. its CRD is not installed). Pure. */
export function isNotServed(err: unknown): boolean {
  return err instanceof KubeApiError && err.status === 404;
}

/** What to tell the operator about a failed request. Pure. */
export function explainFailure(err: unknown, what: string): string {
  if (err instanceof KubeApiError) {
    if (err.status === 401) return `${what}: the API server rejected our credentials (401). Check the service account token / kubeconfig.`;
    if (err.status === 403)
      return `${what}: forbidden (403). Grant get/list/watch on this resource to the forwarder's service account (the Helm chart's RBAC does this for every configured watch).`;
    if (err.status === 404) return `${what}: not found (404). Is the CRD installed and the apiVersion/plural right?`;
    return `${what}: ${err.message}`;
  }
  return `${what}: ${errorMessage(err)}`;
}

export class WatchStream {
  readonly #o: WatchStreamOptions;
  readonly #store = new SnapshotStore();
  readonly #backoff: Backoff;
  readonly #path: string;
  readonly #log: Logger;
  readonly #stop = new AbortController();
  readonly #watchTimeoutSeconds: number;
  /** The `Accept` headers of LIST and WATCH: metadata only when the watch reads nothing else. */
  readonly #accept: { readonly list?: string; readonly watch?: string };
  #current: AbortController | undefined;
  /** Resyncs requested so far, and how many of them a successful LIST has served. */
  #resyncsRequested: number;
  #resyncsServed = 0;
  #synced = false;
  #resolveSynced!: () => void;
  #resolveSettled!: () => void;
  #state: StreamState = 'listing';
  /** The last resourceVersion this stream has seen: a list's, an event's or a bookmark's. */
  #seen = '';
  #loop: Promise<void> | undefined;
  readonly whenSynced: Promise<void>;
  /** Resolves after the first successful list or once the stream first waits for its kind to be served. */
  readonly whenSettled: Promise<void>;

  constructor(options: WatchStreamOptions) {
    this.#o = options;
    this.#backoff = new Backoff({ initialMs: options.backoffInitialMs, maxMs: options.backoffMaxMs });
    this.#path = collectionPath(options.watch, options.namespace);
    this.#log = options.log.child({ watch: options.watch.kind, path: this.#path });
    this.#resyncsRequested = options.resyncFirstList ? 1 : 0;
    this.#watchTimeoutSeconds = watchTimeoutSeconds(options.serverTimeoutSeconds, options.silenceTimeoutMs);
    this.#accept = options.watch.objectFields.length === 0 ? { list: PARTIAL_METADATA_LIST, watch: PARTIAL_METADATA_WATCH } : {};
    this.whenSynced = new Promise((resolve) => (this.#resolveSynced = resolve));
    this.whenSettled = new Promise((resolve) => (this.#resolveSettled = resolve));
  }

  /** Where the stream is (see `StreamState`). */
  get state(): StreamState {
    return this.#state;
  }

  /** Moves to `state`, keeping the per-kind gauge of stream states; `undefined` leaves the gauge (stop). */
  #enter(state: StreamState | undefined): void {
    const labels = { kind: this.#o.watch.kind, role: this.#o.watch.role };
    this.#o.metrics.watchStreams.dec({ ...labels, state: this.#state });
    if (state === undefined) return;
    this.#state = state;
    this.#o.metrics.watchStreams.inc({ ...labels, state });
    if (state === 'waiting') this.#resolveSettled();
  }

  get synced(): boolean {
    return this.#synced;
  }

  /** The watch this stream serves. */
  get watch(): ResolvedWatch {
    return this.#o.watch;
  }

  get path(): string {
    return this.#path;
  }

  get storeSize(): number {
    return this.#store.size;
  }

  /** The last resourceVersion seen (a list's, an event's or a bookmark's): every event up to it has been delivered; '' before the first list. */
  get resourceVersion(): string {
    return this.#seen;
  }

  /** The store's snapshots: the live objects as of `resourceVersion` (a warm standby resyncs from them without a LIST). */
  snapshots(): ObjectSnapshot[] {
    return this.#store.all();
  }

  start(): void {
    if (this.#loop) return;
    this.#o.metrics.watchStreams.inc({ kind: this.#o.watch.kind, role: this.#o.watch.role, state: this.#state });
    this.#loop = this.#run().finally(() => this.#enter(undefined));
  }

  /** Lists again and forwards every primary (reason Resync) — after overflow, on request. */
  requestResync(): void {
    this.#resyncsRequested += 1;
    this.#current?.abort();
  }

  async stop(): Promise<void> {
    this.#stop.abort();
    this.#current?.abort();
    await this.#loop;
  }

  /** A resync was requested that no successful LIST has served yet. */
  get resyncPending(): boolean {
    return this.#resyncsRequested > this.#resyncsServed;
  }

  async #run(): Promise<void> {
    let phase: StreamPhase = { phase: 'list', cause: 'initial' };
    while (!this.#stop.signal.aborted) {
      const outcome =
        phase.phase === 'watch' ? await this.#watchOnce(phase.resourceVersion) : await this.#listOnce(phase.phase === 'list' ? phase.cause : 'retry');
      if (this.#stop.signal.aborted) return;
      const next = step(outcome, this.resyncPending);
      const delay = next.backoff ? this.#backoff.fail() : undefined;
      this.#report(outcome, delay);
      if (delay !== undefined) await pause(delay, this.#stop.signal);
      phase = next.next;
    }
  }

  /** One log line (and the metrics) per attempt that did not simply succeed. */
  #report(outcome: AttemptOutcome, delay: number | undefined): void {
    const kind = this.#o.watch.kind;
    const retry = delay === undefined ? {} : { retryInMs: delay, attempt: this.#backoff.attempt };
    switch (outcome.kind) {
      case 'listed':
        return;
      case 'list-failed':
        this.#log.warn(explainFailure(outcome.error, `LIST ${this.#path} failed`), retry);
        return;
      case 'not-served':
        if (this.#state === 'waiting') {
          this.#log.debug('still not served; polling', retry);
          return;
        }
        this.#enter('waiting');
        this.#log.warn(
          `${this.#o.watch.kind} (${this.#o.watch.apiVersion}) is not served (404: its CRD is not installed, or was deleted); waiting for it, polling with a LIST; the other watches go on`,
          {
            reason: 'not-served',
            role: this.#o.watch.role,
            error: errorMessage(outcome.error),
            ...retry,
          },
        );
        return;
      case 'closed':
        this.#o.metrics.watchRestarts.inc({ kind, cause: 'closed' });
        this.#log.debug('watch closed by the server; resuming', { resourceVersion: outcome.resourceVersion, ...retry });
        return;
      case 'silence':
        this.#o.metrics.watchRestarts.inc({ kind, cause: 'silence' });
        this.#log.warn('watch silent for longer than the server was asked to keep it open (a dead connection); restarting it', {
          silenceTimeoutMs: this.#o.silenceTimeoutMs,
          watchTimeoutSeconds: this.#watchTimeoutSeconds,
          resourceVersion: outcome.resourceVersion,
        });
        return;
      case 'gone':
        this.#o.metrics.relists.inc({ kind, cause: 'gone' });
        this.#log.info('watch history expired (410 Gone); relisting and forwarding only what changed', { resourceVersion: outcome.resourceVersion });
        return;
      case 'too-large':
        this.#o.metrics.relists.inc({ kind, cause: 'too-large' });
        this.#log.warn(
          'the API server is behind the resourceVersion this watch resumes from (504 Too large resource version: etcd restored from a backup?); relisting from etcd and forwarding only what changed',
          {
            resourceVersion: outcome.resourceVersion,
            ...retry,
          },
        );
        return;
      case 'resync':
        this.#o.metrics.relists.inc({ kind, cause: 'resync' });
        return;
      case 'error':
        this.#o.metrics.watchRestarts.inc({ kind, cause: 'error' });
        this.#log.warn(explainFailure(outcome.error, `WATCH ${this.#path} failed`), { resourceVersion: outcome.resourceVersion, ...retry });
        return;
    }
  }

  /** One complete (paginated) LIST, applied to the store and reported through `onList`. */
  async #listOnce(cause: ListCause): Promise<AttemptOutcome> {
    const requested = this.#resyncsRequested;
    const resync = requested > this.#resyncsServed;
    let listed: { items: ObjectSnapshot[]; resourceVersion: string };
    try {
      listed = await this.#list();
    } catch (err) {
      return isNotServed(err) ? { kind: 'not-served', error: err } : { kind: 'list-failed', error: err, cause };
    }
    if (this.#stop.signal.aborted) return { kind: 'listed', resourceVersion: listed.resourceVersion };
    this.#resyncsServed = requested;
    const first = !this.#synced && this.#state !== 'waiting';
    const changes = this.#store.replace(listed.items);
    for (const c of changes) this.#o.metrics.eventsReceived.inc({ kind: this.#o.watch.kind, type: c.type });
    this.#seen = listed.resourceVersion;
    this.#o.onList({ changes, listed: listed.items, first, resync, resourceVersion: listed.resourceVersion });
    if (this.#state === 'waiting')
      this.#log.info(`${this.#o.watch.kind} is served again (its CRD was installed); watching it`, {
        objects: listed.items.length,
        changes: changes.length,
        resourceVersion: listed.resourceVersion,
      });
    else if (first) this.#log.info('watch synced', { objects: listed.items.length, resourceVersion: listed.resourceVersion });
    else this.#log.info('relisted', { objects: listed.items.length, changes: changes.length, resync, cause, resourceVersion: listed.resourceVersion });
    if (!this.#synced) {
      this.#synced = true;
      this.#resolveSynced();
      this.#resolveSettled();
    }
    if (this.#state !== 'watching') this.#enter('watching');
    return { kind: 'listed', resourceVersion: listed.resourceVersion };
  }

  async #list(): Promise<{ items: ObjectSnapshot[]; resourceVersion: string }> {
    const items: ObjectSnapshot[] = [];
    const keep = (item: Record<string, unknown>): void => {
      const s = snapshotOf(item, this.#o.watch.fields);
      if (s) items.push(s);
    };
    const limit = listPageLimit(this.#o.watch, this.#o.listPageSize);
    let continueToken: string | undefined;
    let resourceVersion = '';
    do {
      const query = { limit, labelSelector: this.#o.watch.labelSelector || undefined, continue: continueToken };
      let page: { metadata?: { resourceVersion?: string; continue?: string } };
      try {
        // Each item becomes its snapshot as it arrives; the page is never held whole.
        page = await this.#o.api.listItems(this.#path, keep, {
          query,
          signal: this.#stop.signal,
          timeoutMs: 60_000,
          ...(this.#accept.list ? { accept: this.#accept.list } : {}),
        });
      } catch (err) {
        if (err instanceof KubeApiError && err.status === 410 && continueToken) {
          // The continue token expired mid-pagination: start the list over.
          items.length = 0;
          continueToken = undefined;
          continue;
        }
        throw err;
      }
      if (!continueToken) resourceVersion = page.metadata?.resourceVersion ?? '';
      continueToken = page.metadata?.continue || undefined;
    } while (continueToken);
    return { items, resourceVersion };
  }

  /** One watch connection from `fromVersion`, until it ends one way or another. */
  async #watchOnce(fromVersion: string): Promise<AttemptOutcome> {
    if (this.resyncPending) return { kind: 'resync', resourceVersion: fromVersion };
    const controller = new AbortController();
    this.#current = controller;
    const onStop = () => controller.abort();
    this.#stop.signal.addEventListener('abort', onStop, { once: true });
    const started = Date.now();
    let resourceVersion = fromVersion;
    let received = false;
    let silence: NodeJS.Timeout | undefined;
    let ended: AttemptOutcome | undefined;
    const end = (outcome: AttemptOutcome) => {
      ended ??= outcome;
      controller.abort();
    };
    const armSilence = () => {
      clearTimeout(silence);
      silence = setTimeout(() => end({ kind: 'silence', resourceVersion }), this.#o.silenceTimeoutMs);
    };
    const query = {
      resourceVersion: fromVersion,
      allowWatchBookmarks: true,
      timeoutSeconds: this.#watchTimeoutSeconds,
      labelSelector: this.#o.watch.labelSelector || undefined,
    };
    try {
      armSilence();
      const stream = await this.#o.api.watch(
        this.#path,
        (event: WatchEvent) => {
          if (ended) return;
          received = true;
          armSilence();
          this.#backoff.healthy();
          if (event.type === 'ERROR') {
            const status = event.object as StatusLike;
            const meaning = classifyWatchEnd(status);
            if (meaning === 'error') {
              if (status.code === 404) {
                end({
                  kind: 'not-served',
                  error: new KubeApiError({
                    status: 404,
                    reason: status.reason ?? 'NotFound',
                    request: `WATCH ${this.#path}`,
                    message: status.message ?? 'not found',
                  }),
                });
                return;
              }
              const error = new KubeApiError({
                status: status.code ?? 0,
                reason: status.reason ?? 'Unknown',
                request: `WATCH ${this.#path}`,
                message: `the watch stream reported an error: ${status.code ?? ''} ${status.reason ?? ''}: ${status.message ?? ''}`,
              });
              end({ kind: 'error', resourceVersion, error, ...(status.code ? { status: status.code } : {}) });
            } else end({ kind: meaning, resourceVersion });
            return;
          }
          const meta = (event.object?.metadata ?? {}) as { resourceVersion?: string };
          if (event.type === 'BOOKMARK') {
            if (meta.resourceVersion) resourceVersion = this.#seen = meta.resourceVersion;
            return;
          }
          const snapshot = snapshotOf(event.object, this.#o.watch.fields);
          if (!snapshot) return;
          if (meta.resourceVersion) resourceVersion = this.#seen = meta.resourceVersion;
          this.#o.metrics.eventsReceived.inc({ kind: this.#o.watch.kind, type: event.type });
          this.#o.onChange(this.#store.apply(event.type as ChangeType, snapshot));
        },
        controller.signal,
        { query, ...(this.#accept.watch ? { accept: this.#accept.watch } : {}) },
      );
      await stream.ended;
    } catch (err) {
      if (!ended && !controller.signal.aborted) {
        const status = err instanceof KubeApiError ? err.status : undefined;
        const meaning = err instanceof KubeApiError ? classifyWatchEnd({ code: err.status, reason: err.reason, message: err.message }) : 'error';
        if (isNotServed(err)) ended = { kind: 'not-served', error: err };
        else ended = meaning === 'error' ? { kind: 'error', resourceVersion, error: err, ...(status ? { status } : {}) } : { kind: meaning, resourceVersion };
      }
    } finally {
      clearTimeout(silence);
      this.#stop.signal.removeEventListener('abort', onStop);
      if (this.#current === controller) this.#current = undefined;
    }
    if (ended) return ended;
    // Aborted without an outcome of its own: a resync was requested (or stop(), which the loop sees).
    if (controller.signal.aborted) return { kind: 'resync', resourceVersion };
    if (!received && (await this.#serverIsBehind(resourceVersion))) return { kind: 'too-large', resourceVersion };
    this.#backoff.healthy();
    return { kind: 'closed', resourceVersion, quick: Date.now() - started < 1000 };
  }

  /**
   * After a watch the server closed without sending anything: one quorum read of a single
   * item tells whether the server is behind our resourceVersion (see `serverBehind`). A
   * failed check says no (the next attempt reports its own failure).
   */
  async #serverIsBehind(resourceVersion: string): Promise<boolean> {
    try {
      const page = await this.#o.api.requestJson<{ metadata?: { resourceVersion?: string } }>('GET', this.#path, {
        query: { limit: 1 },
        signal: this.#stop.signal,
        timeoutMs: 30_000,
      });
      return serverBehind(resourceVersion, page.metadata?.resourceVersion ?? '');
    } catch {
      return false;
    }
  }
}
