/**
 * The watch stream: list, then watch from the list's resourceVersion with bookmarks, for
 * one kind (in one namespace or all). It owns every way a watch can go wrong instead of
 * trusting a client library to recover:
 * - server closes the stream (its timeout, an API server restart) → resume from the last
 *   resourceVersion seen (events or bookmarks) at once, then with backoff if it repeats;
 * - 410 Gone (history compacted), as HTTP status or in-stream ERROR → relist, and report
 *   only what differs from the store (no re-flood);
 * - silence longer than `silenceTimeoutMs` (a half-open connection) → abort and resume;
 * - any other error (network, 403, 5xx) → back off with jitter and try again, forever,
 *   logging what happened and what to do.
 *
 * Guarantees: events are delivered in the order the server sent them; after a successful
 * list, `onList` sees the complete set of changes against the store; `whenSynced`
 * resolves after the first successful list; `stop()` ends the loop and the connection.
 */
import { errorMessage, type Logger } from '../observability/log.ts';
import { Backoff, sleep } from './backoff.ts';
import type { WatchEvent } from '../kube/transport.ts';
import { KubeApiError, type KubeApi } from './kube-api.ts';
import type { ForwarderMetrics } from './metrics.ts';
import type { ResolvedWatch } from './router.ts';
import { snapshotOf, type ObjectSnapshot } from './snapshot.ts';
import { SnapshotStore, type Change, type ChangeType } from './store.ts';

export interface ListResult {
  readonly changes: Change[];
  readonly listed: ObjectSnapshot[];
  /** The first list of this stream (the store was empty by construction). */
  readonly first: boolean;
  /** A resync was requested: forward every listed primary. */
  readonly resync: boolean;
}

export interface WatchStreamOptions {
  readonly api: KubeApi;
  readonly watch: ResolvedWatch;
  /** Namespace to watch; undefined = all namespaces (or a cluster-scoped kind). */
  readonly namespace?: string;
  readonly silenceTimeoutMs: number;
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

/** REST collection path of a kind, e.g. /apis/apps/v1/namespaces/ns/deployments. Pure. */
export function collectionPath(watch: Pick<ResolvedWatch, 'apiVersion' | 'plural' | 'namespaced'>, namespace?: string): string {
  const prefix = watch.apiVersion.includes('/') ? `/apis/${watch.apiVersion}` : `/api/${watch.apiVersion}`;
  const ns = watch.namespaced && namespace ? `/namespaces/${encodeURIComponent(namespace)}` : '';
  return `${prefix}${ns}/${watch.plural}`;
}

/** How a watch attempt ended, and what the stream does next. Pure. */
export function nextStep(end: { kind: 'closed' } | { kind: 'silence' } | { kind: 'gone' } | { kind: 'error'; status?: number }): 'resume' | 'relist' | 'backoff-resume' {
  switch (end.kind) {
    case 'closed':
    case 'silence':
      return 'resume';
    case 'gone':
      return 'relist';
    case 'error':
      return end.status === 410 ? 'relist' : 'backoff-resume';
  }
}

/** What to tell the operator about a failed request. Pure. */
export function explainFailure(err: unknown, what: string): string {
  if (err instanceof KubeApiError) {
    if (err.status === 401) return `${what}: the API server rejected our credentials (401). Check the service account token / kubeconfig.`;
    if (err.status === 403) return `${what}: forbidden (403). Grant get/list/watch on this resource to the forwarder's service account (the Helm chart's RBAC does this for every configured watch).`;
    if (err.status === 404) return `${what}: not found (404). Is the CRD installed and the apiVersion/plural right?`;
    return `${what}: ${err.message}`;
  }
  return `${what}: ${errorMessage(err)}`;
}

type WatchEnd = { kind: 'silence' } | { kind: 'gone' } | { kind: 'error'; status?: number };

/** Why one watch connection ended abnormally, and how far it had got. */
class WatchEnded extends Error {
  readonly end: WatchEnd;
  readonly resourceVersion: string;
  readonly original: unknown;
  constructor(end: WatchEnd, resourceVersion: string, original?: unknown) {
    super(end.kind === 'error' ? errorMessage(original) : `watch ended: ${end.kind}`);
    this.end = end;
    this.resourceVersion = resourceVersion;
    this.original = original;
  }
}

export class WatchStream {
  readonly #o: WatchStreamOptions;
  readonly #store = new SnapshotStore();
  readonly #backoff: Backoff;
  readonly #path: string;
  readonly #log: Logger;
  readonly #stop = new AbortController();
  #current: AbortController | undefined;
  #resyncRequested: boolean;
  #synced = false;
  #resolveSynced!: () => void;
  #loop: Promise<void> | undefined;
  readonly whenSynced: Promise<void>;

  constructor(options: WatchStreamOptions) {
    this.#o = options;
    this.#backoff = new Backoff({ initialMs: options.backoffInitialMs, maxMs: options.backoffMaxMs });
    this.#path = collectionPath(options.watch, options.namespace);
    this.#log = options.log.child({ watch: options.watch.kind, path: this.#path });
    this.#resyncRequested = options.resyncFirstList;
    this.whenSynced = new Promise((resolve) => (this.#resolveSynced = resolve));
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

  start(): void {
    this.#loop ??= this.#run();
  }

  /** Lists again and forwards every primary (reason Resync) — after overflow, on request. */
  requestResync(): void {
    this.#resyncRequested = true;
    this.#current?.abort();
  }

  async stop(): Promise<void> {
    this.#stop.abort();
    this.#current?.abort();
    await this.#loop;
  }

  async #run(): Promise<void> {
    let resourceVersion: string | undefined;
    let first = true;
    while (!this.#stop.signal.aborted) {
      if (resourceVersion === undefined || this.#resyncRequested) {
        try {
          const resync = this.#resyncRequested;
          this.#resyncRequested = false;
          const listed = await this.#list();
          if (this.#stop.signal.aborted) return;
          resourceVersion = listed.resourceVersion;
          const changes = this.#store.replace(listed.items);
          for (const c of changes) this.#o.metrics.eventsReceived.inc({ kind: this.#o.watch.kind, type: c.type });
          this.#o.onList({ changes, listed: listed.items, first, resync });
          if (first) this.#log.info('watch synced', { objects: listed.items.length, resourceVersion });
          else this.#log.info('relisted', { objects: listed.items.length, changes: changes.length, resync, resourceVersion });
          first = false;
          if (!this.#synced) {
            this.#synced = true;
            this.#resolveSynced();
          }
        } catch (err) {
          if (this.#stop.signal.aborted) return;
          const delay = this.#backoff.fail();
          this.#log.warn(explainFailure(err, `LIST ${this.#path} failed`), { retryInMs: delay, attempt: this.#backoff.attempt });
          await sleep(delay, this.#stop.signal);
          continue;
        }
      }
      try {
        const started = Date.now();
        resourceVersion = await this.#watchOnce(resourceVersion);
        // Clean close (server timeout or restart): resume from where we are, at once —
        // unless the server keeps closing at once, which must not become a request storm.
        this.#o.metrics.watchRestarts.inc({ kind: this.#o.watch.kind, cause: 'closed' });
        this.#log.debug('watch closed by the server; resuming', { resourceVersion });
        if (Date.now() - started < 1000) await sleep(this.#backoff.fail(), this.#stop.signal);
      } catch (err) {
        if (this.#stop.signal.aborted) return;
        const ended = err instanceof WatchEnded ? err : new WatchEnded({ kind: 'error' }, resourceVersion, err);
        resourceVersion = ended.resourceVersion;
        if (this.#resyncRequested) continue;
        const end = ended.end;
        const step = nextStep(end);
        if (step === 'relist') {
          this.#o.metrics.relists.inc({ kind: this.#o.watch.kind, cause: 'gone' });
          this.#log.info('watch history expired (410 Gone); relisting and forwarding only what changed', { resourceVersion });
          resourceVersion = undefined;
          continue;
        }
        this.#o.metrics.watchRestarts.inc({ kind: this.#o.watch.kind, cause: end.kind === 'silence' ? 'silence' : 'error' });
        if (step === 'resume') {
          this.#log.warn('watch silent for too long; restarting it', { silenceTimeoutMs: this.#o.silenceTimeoutMs, resourceVersion });
          continue;
        }
        const delay = this.#backoff.fail();
        this.#log.warn(explainFailure(ended.original, `WATCH ${this.#path} failed`), { retryInMs: delay, attempt: this.#backoff.attempt, resourceVersion });
        await sleep(delay, this.#stop.signal);
      }
    }
  }

  async #list(): Promise<{ items: ObjectSnapshot[]; resourceVersion: string }> {
    const items: ObjectSnapshot[] = [];
    let continueToken: string | undefined;
    let resourceVersion = '';
    do {
      const query = new URLSearchParams({ limit: String(this.#o.listPageSize) });
      if (this.#o.watch.labelSelector) query.set('labelSelector', this.#o.watch.labelSelector);
      if (continueToken) query.set('continue', continueToken);
      let page: { metadata?: { resourceVersion?: string; continue?: string }; items?: Record<string, unknown>[] };
      try {
        page = await this.#o.api.requestJson('GET', `${this.#path}?${query}`, { signal: this.#stop.signal, timeoutMs: 60_000 });
      } catch (err) {
        if (err instanceof KubeApiError && err.status === 410 && continueToken) {
          // The continue token expired mid-pagination: start the list over.
          items.length = 0;
          continueToken = undefined;
          continue;
        }
        throw err;
      }
      for (const item of page.items ?? []) {
        const s = snapshotOf(item);
        if (s) items.push(s);
      }
      if (!continueToken) resourceVersion = page.metadata?.resourceVersion ?? '';
      continueToken = page.metadata?.continue || undefined;
    } while (continueToken);
    return { items, resourceVersion };
  }

  /** One watch connection; resolves with the last resourceVersion on a clean server close. */
  async #watchOnce(fromVersion: string): Promise<string> {
    const controller = new AbortController();
    this.#current = controller;
    const onStop = () => controller.abort();
    this.#stop.signal.addEventListener('abort', onStop, { once: true });
    let resourceVersion = fromVersion;
    let silence: NodeJS.Timeout | undefined;
    let ended: WatchEnded | undefined;
    const fail = (e: WatchEnded) => {
      ended ??= e;
      controller.abort();
    };
    const armSilence = () => {
      clearTimeout(silence);
      silence = setTimeout(() => fail(new WatchEnded({ kind: 'silence' }, resourceVersion)), this.#o.silenceTimeoutMs);
    };
    const query = new URLSearchParams({
      watch: 'true',
      resourceVersion: fromVersion,
      allowWatchBookmarks: 'true',
      timeoutSeconds: String(this.#o.serverTimeoutSeconds),
    });
    if (this.#o.watch.labelSelector) query.set('labelSelector', this.#o.watch.labelSelector);
    try {
      armSilence();
      const stream = await this.#o.api.watch(`${this.#path}?${query}`, (event: WatchEvent) => {
        if (ended) return;
        armSilence();
        this.#backoff.healthy();
        if (event.type === 'ERROR') {
          const status = event.object as { code?: number; message?: string; reason?: string };
          if (status.code === 410) fail(new WatchEnded({ kind: 'gone' }, resourceVersion));
          else fail(new WatchEnded({ kind: 'error', ...(status.code ? { status: status.code } : {}) }, resourceVersion));
          if (status.code !== 410) this.#log.warn('watch stream reported an error', { code: status.code, reason: status.reason, error: status.message });
          return;
        }
        const meta = (event.object?.metadata ?? {}) as { resourceVersion?: string };
        if (event.type === 'BOOKMARK') {
          if (meta.resourceVersion) resourceVersion = meta.resourceVersion;
          return;
        }
        const snapshot = snapshotOf(event.object);
        if (!snapshot) return;
        if (meta.resourceVersion) resourceVersion = meta.resourceVersion;
        this.#o.metrics.eventsReceived.inc({ kind: this.#o.watch.kind, type: event.type });
        this.#o.onChange(this.#store.apply(event.type as ChangeType, snapshot));
      }, controller.signal);
      await stream.ended;
      if (ended) throw ended;
      if (controller.signal.aborted) throw new WatchEnded({ kind: 'silence' }, resourceVersion);
      this.#backoff.healthy();
      return resourceVersion;
    } catch (err) {
      if (ended) throw ended;
      if (err instanceof WatchEnded) throw err;
      if (err instanceof KubeApiError && err.status === 410) throw new WatchEnded({ kind: 'gone' }, resourceVersion);
      throw new WatchEnded({ kind: 'error', ...(err instanceof KubeApiError ? { status: err.status } : {}) }, resourceVersion, err);
    } finally {
      clearTimeout(silence);
      this.#stop.signal.removeEventListener('abort', onStop);
      if (this.#current === controller) this.#current = undefined;
    }
  }
}
