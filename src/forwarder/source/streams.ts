/**
 * The watch streams of one leadership term: one `WatchStream` per watch and watched namespace
 * (all namespaces, or a cluster-scoped kind, as one stream), started together and stopped
 * together.
 *
 * Guarantees: `start` replaces nothing (call `stop` first; a stopped set is empty);
 * `stop` ends every stream wherever it is (LIST, watch, backoff) and resolves once all have
 * ended; `synced` resolves once every stream of the current set listed once or waits for its
 * kind to be served (its CRD is missing: watcher.ts), and never rejects; `unsyncedPaths` names
 * the streams that have done neither, `waitingPaths` the ones waiting for their kind.
 */
import type { KubeApi } from '../../kube/api.ts';
import { collectionPath } from '../../kube/paths.ts';
import type { Logger } from '../../observability/log.ts';
import type { ForwarderConfig } from '../config/config.ts';
import type { ForwarderMetrics } from '../metrics.ts';
import type { ResolvedWatch } from './watches.ts';
import type { Change } from './store.ts';
import { WatchStream, type ListResult } from './watcher.ts';

export interface StreamHandlers {
  /** A stream listed: `stream` is its collection path (the id of its resync). */
  readonly onList: (watch: ResolvedWatch, result: ListResult, stream: string) => void;
  readonly onChange: (watch: ResolvedWatch, change: Change, stream: string) => void;
}

export interface WatchStreamsOptions {
  readonly api: KubeApi;
  readonly config: Pick<ForwarderConfig, 'watch' | 'resyncOnStart'>;
  readonly metrics: ForwarderMetrics;
  readonly log: Logger;
}

export class WatchStreams {
  readonly #o: WatchStreamsOptions;
  #streams: WatchStream[] = [];

  constructor(options: WatchStreamsOptions) {
    this.#o = options;
  }

  /** The current streams (empty when stopped). */
  get all(): readonly WatchStream[] {
    return this.#streams;
  }

  /** Starts a stream per watch and namespace. */
  start(watches: readonly ResolvedWatch[], handlers: StreamHandlers): void {
    const { api, config, metrics, log } = this.#o;
    this.#streams = watches.flatMap((watch) => {
      const namespaces: (string | undefined)[] = watch.namespaced && watch.namespaces.length > 0 ? [...watch.namespaces] : [undefined];
      return namespaces.map((namespace) => {
        log.info('watching', { role: watch.role, kind: watch.kind, apiVersion: watch.apiVersion, namespace: namespace ?? 'all' });
        const stream = collectionPath(watch, namespace);
        return new WatchStream({
          api,
          watch,
          ...(namespace ? { namespace } : {}),
          silenceTimeoutMs: config.watch.silenceTimeoutSeconds * 1000,
          serverTimeoutSeconds: config.watch.serverTimeoutSeconds,
          backoffInitialMs: config.watch.backoffInitialMs,
          backoffMaxMs: config.watch.backoffMaxMs,
          listPageSize: config.watch.listPageSize,
          resyncFirstList: config.resyncOnStart,
          metrics,
          log,
          onList: (result) => handlers.onList(watch, result, stream),
          onChange: (change) => handlers.onChange(watch, change, stream),
        });
      });
    });
    for (const s of this.#streams) s.start();
  }

  /** Resolves once every current stream listed once or waits for its kind to be served. */
  synced(): Promise<void> {
    return Promise.all(this.#streams.map((s) => s.whenSettled)).then(() => undefined);
  }

  unsyncedPaths(): string[] {
    return this.#streams.filter((s) => s.state === 'listing').map((s) => s.path);
  }

  waitingPaths(): string[] {
    return this.#streams.filter((s) => s.state === 'waiting').map((s) => s.path);
  }

  /** Asks every primary stream matching `feeds` for a resync; returns their kinds. */
  resyncPrimaries(feeds: (watch: ResolvedWatch) => boolean): string[] {
    const resynced = this.#streams.filter((s) => s.watch.role === 'primary' && feeds(s.watch));
    for (const s of resynced) s.requestResync();
    return [...new Set(resynced.map((s) => s.watch.kind))];
  }

  async stop(): Promise<void> {
    const current = this.#streams;
    this.#streams = [];
    await Promise.all(current.map((s) => s.stop()));
  }
}
