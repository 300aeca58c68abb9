/**
 * The forwarder: wires the stages together — watch streams (list+watch per kind and
 * namespace) → router (predicates, owner mapping) → coalescer (per-key window) → sender
 * (bounded buffer, SendMessageBatch) — under leader election, with probes and metrics.
 *
 * Queues: each primary kind sends to its queue (`queueUrl`, default `queue.url`), an owned
 * object's message to its owner's kind's queue. Every distinct queue has its own lane — a
 * coalescer and a sender with its own bounded buffer, backoff and reachability — so one
 * queue's outage never delays another's messages; `/readyz` names the queue at fault. While a
 * lane's queue is backlogged its coalescing window widens to the estimated wait (backlog.ts).
 * A resync (on start, on gaining leadership, after an overflow) does not go through the buffer at
 * once: each lane feeds it in as room frees up (resync-feed.ts), behind live changes, so a resync
 * of any size never overflows the buffer and an overflow's healing resync cannot overflow again.
 *
 * `startForwarder(config, deps?)` runs it in-process (tests, the local dev loop);
 * `main.ts` is the container entry point around the same function.
 *
 * Guarantees:
 * - only the leader (or the only replica when election is off) watches and sends; on
 *   gaining leadership it lists every kind and forwards every primary (`Resync`) when
 *   `resyncOnStart` is on, so changes made while no leader ran are not missed;
 * - losing leadership stops sending at once and discards the buffer and the resync feed (the
 *   next leader resyncs);
 * - no timer can take the process down: the backlog sampler's and the probes' failures are
 *   logged and counted (`send_errors_total{kind="internal"}`), the sender's loop handles its own
 *   (sender.ts);
 * - `stop()` stops watching, sends everything pending within the grace period, releases
 *   the lease, closes the probe server and the API server connections, and reports how
 *   many messages were left unsent;
 * - an invalid config throws `ConfigError` synchronously; startup failures (unknown
 *   kind, port in use) reject `ready` with a message saying what to do.
 */
import { KubeConfig } from '@kubernetes/client-node/dist/config.js';
import { displayKey, newMessage, objectKey, type ReconcileMessage } from '../contract/message.ts';
import { createLogger, errorMessage, type Logger } from '../observability/log.ts';
import { BacklogEstimator, coalescingWindowMs } from './coalesce/backlog.ts';
import { Coalescer } from './coalesce/coalescer.ts';
import { isValidatedConfig, parseConfig, type ForwarderConfig, type ForwarderConfigInput, type ForwarderEnv } from './config.ts';
import { createKubeApi, type KubeApi } from '../kube/api.ts';
import { regionOfQueueUrl } from './config.ts';
import { LeaderElector } from './control/leader.ts';
import { createForwarderMetrics, type ForwarderMetrics } from './metrics.ts';
import type { QueuePort } from '../queue/port.ts';
import { createSqsQueue } from '../queue/sqs.ts';
import { queueLabels, queueRoutes } from './sink/queues.ts';
import { resolveWatches } from './source/resources.ts';
import { ResyncFeed } from './sink/resync-feed.ts';
import { resyncRouted, routeChange, type Drop, type Forward } from './route/router.ts';
import type { ResolvedWatch } from './source/resources.ts';
import { Sender } from './sink/sender.ts';
import { startProbeServer, type Check, type ProbeServer } from './control/server.ts';
import type { ObjectSnapshot } from './source/snapshot.ts';
import type { Change } from './source/store.ts';
import { collectionPath } from '../kube/paths.ts';
import { WatchStream, type ListResult } from './source/watcher.ts';

export interface ForwarderDeps {
  /** Credentials and API server; default: KUBECONFIG / ~/.kube/config / in-cluster. */
  readonly kubeConfig?: KubeConfig;
  /** One port for EVERY queue URL (tests, in-process consumers); default: SQS per queue. */
  readonly queue?: QueuePort;
  /** The port of each queue URL (wins over `queue`); default: SQS at that URL (AWS SDK credential chain). */
  readonly queues?: (queueUrl: string) => QueuePort;
  readonly logger?: Logger;
  /** Environment used when `config` is a raw document (default: none — the document says everything). */
  readonly env?: ForwarderEnv;
  readonly now?: () => number;
  /** Serve /healthz, /readyz, /metrics (default true; port from config.server.port, 0 = any). */
  readonly serve?: boolean;
  /** Also export Node.js process metrics (default false; main.ts turns it on). */
  readonly processMetrics?: boolean;
}

export interface Forwarder {
  readonly config: ForwarderConfig;
  /** Resolves once the forwarder is running: leader with every watch synced, or a standing-by follower. */
  readonly ready: Promise<void>;
  readonly metrics: ForwarderMetrics;
  /** Base URL of the probe server (after `ready`), e.g. http://127.0.0.1:8080. */
  readonly url: string | undefined;
  isLeader(): boolean;
  health(): Check;
  readiness(): Check;
  /** Messages waiting (coalescing window + send buffer + resyncs not yet fed to it), over every queue. */
  pending(): number;
  /** Messages waiting per queue URL. */
  pendingByQueue(): ReadonlyMap<string, number>;
  /** Stops; flushes pending messages for up to `graceMs` (default config.shutdownGraceMs). */
  stop(options?: { graceMs?: number }): Promise<{ unsent: number }>;
}

/** How often an active lane samples its queue's depth (one GetQueueAttributes each time). */
const BACKLOG_SAMPLE_MS = 2_000;
/** A lane that forwarded nothing for this long and sees no backlog stops sampling. */
const BACKLOG_IDLE_MS = 10_000;

export function startForwarder(input: ForwarderConfig | ForwarderConfigInput, deps: ForwarderDeps = {}): Forwarder {
  const config = isValidatedConfig(input) ? input : parseConfig(input, deps.env ?? {}, 'startForwarder config');
  const now = deps.now ?? Date.now;
  const log = (deps.logger ?? createLogger()).child({ component: 'forwarder', cluster: config.clusterId });
  const metrics = createForwarderMetrics({ defaultMetrics: deps.processMetrics ?? false });
  const kubeConfig = deps.kubeConfig ?? defaultKubeConfig();
  const api: KubeApi = createKubeApi(kubeConfig, { userAgent: 'operless-forwarder' });
  const routes = queueRoutes(config.queue.url, config.watches);
  const labels = queueLabels(routes.urls);
  const portFor = (url: string): QueuePort => deps.queues?.(url) ?? deps.queue ?? createSqsQueue({
    queueUrl: url,
    region: regionOfQueueUrl(url) ?? config.queue.region,
    ...(config.queue.endpoint ? { endpoint: config.queue.endpoint } : {}),
    timeouts: { connectTimeoutMs: config.send.connectTimeoutMs, requestTimeoutMs: config.send.requestTimeoutMs },
  });

  let streams: WatchStream[] = [];
  let watches: ResolvedWatch[] = [];
  let leading = false;
  let stopping = false;
  let started = false;
  let fatal: string | undefined;
  let flushTimer: NodeJS.Timeout | undefined;
  let flushDueAt = Number.POSITIVE_INFINITY;
  let forgetTimer: NodeJS.Timeout | undefined;
  let probeTimer: NodeJS.Timeout | undefined;
  let backlogTimer: NodeJS.Timeout | undefined;
  let server: ProbeServer | undefined;
  let elector: LeaderElector | undefined;
  /** Settles when the current leadership term ends (leadership lost) or stop() begins; then renewed. */
  let termEnded = Promise.withResolvers<void>();
  function endTerm(): void {
    termEnded.resolve();
    termEnded = Promise.withResolvers<void>();
  }
  /**
   * Resolves once this replica leads with every stream synced — or no longer leads, or is
   * stopping: a watch that never syncs (403, 404, a CRD removed) must not hold `ready`, and
   * with it `stop()`, forever.
   */
  async function leaderSynced(): Promise<void> {
    while (leading && !stopping) {
      const ended = termEnded.promise.then(() => false);
      if (await Promise.race([Promise.all(streams.map((s) => s.whenSynced)).then(() => true), ended])) return;
    }
  }

  /** One queue's path out: its own coalescing window (widened by its backlog) and sender. */
  interface Lane {
    readonly url: string;
    readonly label: string;
    readonly port: QueuePort;
    readonly coalescer: Coalescer;
    readonly sender: Sender;
    /** Resyncs in progress, fed into the sender's buffer as it has room (resync-feed.ts). */
    readonly resync: ResyncFeed<ReconcileMessage>;
    readonly backlog: BacklogEstimator;
    lastForwardAt: number;
    sampling: boolean;
    /** The window the last sample gave (what the gauge shows); coalesceWindowMs when idle. */
    windowMs: number;
  }
  const lanes = new Map<string, Lane>(routes.urls.map((url) => {
    const port = portFor(url);
    const label = labels.get(url) ?? url;
    const backlog = new BacklogEstimator();
    const coalescer = new Coalescer(() => coalescingWindowMs(config.coalesceWindowMs, config.coalesceMaxWindowMs, backlog.waitMs(now())));
    const resync = new ResyncFeed<ReconcileMessage>(objectKey, (done) => {
      log.info('resync sent', { queue: url, stream: done.id, objects: done.listed, sent: done.fed, coveredByLiveChanges: done.satisfied });
    });
    const sender = new Sender({
      queue: port,
      queueLabel: label,
      maxMessages: config.buffer.maxMessages,
      maxBatchBytes: config.send.maxBatchBytes,
      maxSenderFaultRetries: config.send.maxSenderFaultRetries,
      backoffInitialMs: config.send.backoffInitialMs,
      backoffMaxMs: config.send.backoffMaxMs,
      metrics,
      log: log.child({ queue: url }),
      now,
      extraDepth: () => coalescer.size,
      resync,
      onOverflowDrained: () => {
        const resynced = streams.filter((s) => s.watch.role === 'primary' && routes.queueFor(s.watch) === url);
        log.info('send buffer drained after an overflow; resyncing the primaries of this queue so dropped changes are sent', { queue: url, kinds: [...new Set(resynced.map((s) => s.watch.kind))] });
        for (const s of resynced) s.requestResync();
      },
    });
    return [url, { url, label, port, coalescer, sender, resync, backlog, lastForwardAt: Number.NEGATIVE_INFINITY, sampling: false, windowMs: config.coalesceWindowMs }];
  }));
  const allLanes = [...lanes.values()];
  const laneFor = (ref: { apiVersion: string; kind: string }): Lane => lanes.get(routes.queueFor(ref)) ?? allLanes[0]!;
  const coalesced = () => allLanes.reduce((n, l) => n + l.coalescer.size, 0);
  const buffered = () => allLanes.reduce((n, l) => n + l.sender.depth + l.resync.pending, 0);

  function messageOf(r: Forward, at: number): ReconcileMessage {
    return newMessage({ ...r.ref, ...(r.uid ? { uid: r.uid } : {}), ...(r.resourceVersion ? { resourceVersion: r.resourceVersion } : {}) }, r.reason, at);
  }

  /**
   * Runs one lane's part of a periodic task (backlog sample, probe, window sweep): a failure is
   * logged and counted (`send_errors_total{kind="internal"}`), never an uncaught exception, and
   * the task runs again at its next tick.
   */
  function forEachLaneGuarded(task: string, body: (lane: Lane) => void): void {
    for (const lane of allLanes) {
      try {
        body(lane);
      } catch (err) {
        metrics.sendErrors.inc({ kind: 'internal', queue: lane.label });
        log.error(`the ${task} failed; it runs again at its next tick`, { queue: lane.url, error: errorMessage(err) });
      }
    }
  }

  function forward(requests: readonly Forward[]): void {
    if (!leading || requests.length === 0) return;
    const at = now();
    let earliestHeld = Number.POSITIVE_INFINITY;
    for (const r of requests) {
      const message = messageOf(r, at);
      metrics.messagesEnqueued.inc({ kind: r.ref.kind, reason: r.reason });
      const lane = laneFor(message);
      lane.lastForwardAt = at;
      lane.resync.satisfy(objectKey(message)); // this message's reconcile covers the key's resync
      if (config.coalesceWindowMs === 0) lane.sender.enqueue([message]);
      else {
        const { send, coalesced, heldUntil } = lane.coalescer.offer(message, at);
        if (send) lane.sender.enqueue([send]);
        if (coalesced) metrics.messagesCoalesced.inc();
        if (heldUntil !== undefined && heldUntil < earliestHeld) earliestHeld = heldUntil;
      }
      log.debug('change forwarded', { key: displayKey(message), reason: message.reason, resourceVersion: message.resourceVersion, queue: lane.url });
    }
    if (earliestHeld !== Number.POSITIVE_INFINITY) scheduleFlush(earliestHeld);
  }

  /**
   * One timer for every lane's held messages, due at the earliest of them. O(1) per change
   * (a new held message only moves the timer earlier); the windows are scanned once per
   * timer, not once per event.
   */
  function scheduleFlush(dueAt: number): void {
    if (flushTimer && flushDueAt <= dueAt) return;
    clearTimeout(flushTimer);
    flushDueAt = dueAt;
    flushTimer = setTimeout(() => {
      flushTimer = undefined;
      flushDueAt = Number.POSITIVE_INFINITY;
      const at = now();
      for (const lane of allLanes) lane.sender.enqueue(lane.coalescer.takeDue(at));
      const next = Math.min(...allLanes.map((l) => l.coalescer.nextDueAt() ?? Number.POSITIVE_INFINITY));
      if (next !== Number.POSITIVE_INFINITY) scheduleFlush(next);
    }, Math.max(0, dueAt - now()));
  }

  /**
   * Samples each active lane's queue depth for its backlog estimate (backlog.ts). A lane is
   * sampled while it forwarded something in the last `BACKLOG_IDLE_MS` or still sees a
   * backlog; an idle lane forgets its estimate and costs no requests. A failed sample only
   * leaves the estimate to go stale (no backlog: the configured window).
   */
  function sampleBacklogs(): void {
    const at = now();
    forEachLaneGuarded('backlog sampler', (lane) => {
      const depth = lane.port.depth?.bind(lane.port);
      if (!depth || lane.sampling) return;
      if (!leading || (at - lane.lastForwardAt > BACKLOG_IDLE_MS && lane.backlog.waitMs(at) === 0)) {
        lane.backlog.reset();
        setWindow(lane, config.coalesceWindowMs, at); // once: an idle lane then costs nothing
        return;
      }
      lane.sampling = true;
      const sentTotal = lane.sender.sentTotal;
      Promise.resolve()
        .then(depth) // a port that throws at once, or answers with no promise, fails like a failed request
        .then((d) => {
          if (stopping) return; // stop() already took every held message
          const at = now();
          lane.backlog.observe({ at, ...d, sentTotal });
          setWindow(lane, coalescingWindowMs(config.coalesceWindowMs, config.coalesceMaxWindowMs, lane.backlog.waitMs(at)), at);
        })
        .catch((err: unknown) => log.debug('queue depth sample failed; the coalescing window falls back to coalesceWindowMs', { queue: lane.url, error: errorMessage(err) }))
        .finally(() => {
          lane.sampling = false;
        });
    });
  }

  /** Records a lane's window for the gauge; when it shrank, windows opened for a longer wait end sooner. */
  function setWindow(lane: Lane, windowMs: number, at: number): void {
    if (windowMs === lane.windowMs) return;
    const shrank = windowMs < lane.windowMs;
    lane.windowMs = windowMs;
    metrics.coalescingWindow.set({ queue: lane.label }, windowMs / 1000);
    if (!shrank) return;
    const due = lane.coalescer.shortenTo(windowMs, at);
    if (due !== undefined) scheduleFlush(due);
  }

  function cancelFlush(): void {
    clearTimeout(flushTimer);
    flushTimer = undefined;
    flushDueAt = Number.POSITIVE_INFINITY;
  }

  function handleChange(watch: ResolvedWatch, change: Change): void {
    const { forwards, dropped } = routeChange(config.clusterId, watch, change, watches);
    for (const drop of dropped) reportDrop(watch, change.current, drop);
    if (forwards.length === 0 && dropped.length === 0) metrics.eventsFiltered.inc({ kind: watch.kind });
    forward(forwards);
  }

  /** A request the contract refuses (router.ts): one WARN line naming the object, and the counter. */
  function reportDrop(watch: ResolvedWatch, object: ObjectSnapshot, drop: Drop): void {
    metrics.eventsDropped.inc({ reason: drop.reason });
    log.warn(drop.target === 'owner'
      ? 'change dropped: its controller owner reference names an object no reconcile message can name'
      : 'change dropped: the object has a name or namespace no reconcile message can carry', {
      key: displayKey({ kind: watch.kind, ...(object.namespace ? { namespace: object.namespace } : {}), name: clip(object.name) }),
      uid: object.uid,
      reason: drop.reason,
      error: drop.error,
      ...(drop.owner ? { owner: { apiVersion: clip(drop.owner.apiVersion), kind: clip(drop.owner.kind), name: clip(drop.owner.name), uid: clip(drop.owner.uid) } } : {}),
    });
  }

  /** A value from an object for a log line: at most 253 characters (an owner reference's name is unbounded). */
  function clip(value: string): string {
    return value.length > 253 ? `${value.slice(0, 253)}…` : value;
  }

  function handleList(watch: ResolvedWatch, result: ListResult, stream: string): void {
    if (result.resync && watch.role === 'primary') {
      const deleted = result.changes.filter((c) => c.type === 'DELETED').map((c) => ({ change: c, routed: routeChange(config.clusterId, watch, c, watches) }));
      for (const { change, routed } of deleted) for (const drop of routed.dropped) reportDrop(watch, change.current, drop);
      forward(deleted.flatMap((d) => d.routed.forwards));
      startResync(watch, stream, result.listed);
      return;
    }
    if (result.first) return; // the store was empty: nothing to compare against
    for (const change of result.changes) handleChange(watch, change);
  }

  /**
   * Hands a stream's listed primaries to its lane's resync feed: the sender takes them as its
   * buffer has room (behind live changes), so the resync never overflows the buffer. A newer
   * resync of the same stream replaces one still in progress.
   */
  function startResync(watch: ResolvedWatch, stream: string, listed: readonly ObjectSnapshot[]): void {
    if (!leading) return;
    const lane = laneFor(watch);
    const at = now();
    // Objects no reconcile message can name are dropped here, with a reason, never fed.
    const valid = listed.filter((snapshot) => {
      const { dropped } = resyncRouted(config.clusterId, watch, [snapshot]);
      for (const { object, drop } of dropped) reportDrop(watch, object, drop);
      return dropped.length === 0;
    });
    metrics.messagesEnqueued.inc({ kind: watch.kind, reason: 'Resync' }, valid.length);
    lane.resync.start(stream, valid, (snapshot) => messageOf(resyncRouted(config.clusterId, watch, [snapshot]).forwards[0]!, at));
    lane.lastForwardAt = at;
    lane.sender.resyncAdded();
    log.info('resync started', { queue: lane.url, stream, objects: valid.length, pendingInLane: lane.resync.pending });
  }

  function startStreams(): void {
    streams = watches.flatMap((watch) => {
      const namespaces: (string | undefined)[] = watch.namespaced && watch.namespaces.length > 0 ? [...watch.namespaces] : [undefined];
      return namespaces.map((namespace) => {
        log.info('watching', { role: watch.role, kind: watch.kind, apiVersion: watch.apiVersion, namespace: namespace ?? 'all' });
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
        onList: (result) => handleList(watch, result, collectionPath(watch, namespace)),
        onChange: (change) => handleChange(watch, change),
        });
      });
    });
    for (const s of streams) s.start();
    Promise.all(streams.map((s) => s.whenSynced)).then(() => {
      if (leading) metrics.watchesSynced.set(1);
    }, () => {});
  }

  async function stopStreams(): Promise<void> {
    const current = streams;
    streams = [];
    metrics.watchesSynced.set(0);
    await Promise.all(current.map((s) => s.stop()));
  }

  function becameLeader(): void {
    leading = true;
    metrics.leader.set(1);
    for (const lane of allLanes) lane.sender.setActive(true);
    if (!stopping) startStreams();
  }

  function lostLeadership(): void {
    leading = false;
    endTerm();
    metrics.leader.set(0);
    for (const lane of allLanes) lane.sender.setActive(false);
    void stopStreams();
    cancelFlush();
    const dropped = allLanes.reduce((n, l) => n + l.resync.clear() + l.coalescer.takeAll().length + l.sender.discard(), 0);
    if (dropped > 0) log.info('discarded pending messages on losing leadership; the new leader resyncs', { dropped });
  }

  const health = (): Check => (fatal ? { ok: false, reasons: [fatal] } : { ok: true, reasons: [] });
  const readiness = (): Check => {
    const reasons: string[] = [];
    if (fatal) reasons.push(fatal);
    if (!started) reasons.push('starting: resolving watches and the leader election');
    if (stopping) reasons.push('shutting down');
    if (leading) {
      const unsynced = streams.filter((s) => !s.synced).map((s) => s.path);
      if (unsynced.length > 0) reasons.push(`watches not synced yet: ${unsynced.join(', ')}`);
      for (const lane of allLanes) {
        if (lane.sender.failing) reasons.push(`the send loop of queue ${lane.url} keeps failing: ${lane.sender.failing} (it backs off and retries; see the error log)`);
        if (lane.sender.overflowed) reasons.push(`send buffer of queue ${lane.url} overflowed (capacity ${config.buffer.maxMessages}); messages were dropped and a resync of its kinds follows once the queue drains`);
      }
    }
    for (const lane of allLanes) {
      if (lane.sender.reachable === false) reasons.push(`queue unreachable: ${lane.url} (its messages stay buffered and are retried; check the URL, the network and the forwarder's IAM role)`);
    }
    return { ok: reasons.length === 0, reasons };
  };

  const ready = (async () => {
    if (deps.serve !== false) {
      server = await startProbeServer({ host: config.server.host, port: config.server.port, health, readiness, registry: metrics.registry });
    }
    watches = await resolveWatches(api, config.watches);
    for (const w of watches) {
      log.info('configured watch', {
        role: w.role, apiVersion: w.apiVersion, kind: w.kind, plural: w.plural, namespaced: w.namespaced,
        namespaces: w.namespaces.length > 0 ? w.namespaces : 'all', labelSelector: w.labelSelector, triggers: w.triggers,
      });
    }
    if (stopping) return;
    forEachLaneGuarded('queue probe', (lane) => void lane.sender.probe());
    probeTimer = setInterval(() => forEachLaneGuarded('queue probe', (lane) => {
      if (lane.sender.depth === 0) void lane.sender.probe();
    }), config.send.probeIntervalSeconds * 1000);
    probeTimer.unref();
    if (config.coalesceWindowMs > 0) {
      // Ended windows with nothing held are forgotten, so after a resync of N objects the
      // coalescer does not keep N windows (memory tracks the keys changing now).
      forgetTimer = setInterval(() => {
        const at = now();
        forEachLaneGuarded('coalescing window sweep', (lane) => lane.coalescer.forgetEnded(at));
      }, Math.max(1000, 2 * config.coalesceWindowMs));
      forgetTimer.unref();
    }
    if (config.coalesceWindowMs > 0 && config.coalesceMaxWindowMs > config.coalesceWindowMs) {
      for (const lane of allLanes) metrics.coalescingWindow.set({ queue: lane.label }, config.coalesceWindowMs / 1000);
      backlogTimer = setInterval(sampleBacklogs, BACKLOG_SAMPLE_MS);
      backlogTimer.unref();
    }
    if (config.leaderElection.enabled) {
      const le = config.leaderElection;
      elector = new LeaderElector({
        api,
        namespace: le.namespace,
        name: le.leaseName,
        identity: le.identity,
        leaseDurationSeconds: le.leaseDurationSeconds,
        renewDeadlineSeconds: le.renewDeadlineSeconds,
        retryPeriodSeconds: le.retryPeriodSeconds,
        log,
        now,
        onStartedLeading: becameLeader,
        onStoppedLeading: lostLeadership,
      });
      elector.start();
      await elector.decided;
    } else {
      becameLeader();
    }
    started = true;
    await leaderSynced();
    if (stopping) return;
    log.info('forwarder running', { leader: leading, queues: routes.urls, probes: server?.url });
  })();
  ready.catch((err: unknown) => {
    fatal = `startup failed: ${errorMessage(err)}`;
    log.error(fatal);
  });

  let stopped: Promise<{ unsent: number }> | undefined;
  async function stop(options: { graceMs?: number } = {}): Promise<{ unsent: number }> {
    stopping = true;
    endTerm();
    const graceMs = options.graceMs ?? config.shutdownGraceMs;
    const deadline = now() + graceMs;
    await ready.catch(() => {});
    clearInterval(probeTimer);
    clearInterval(backlogTimer);
    await stopStreams();
    cancelFlush();
    clearInterval(forgetTimer);
    let unsent = 0;
    if (leading) {
      for (const lane of allLanes) lane.sender.enqueue(lane.coalescer.takeAll());
      const left = await Promise.all(allLanes.map((l) => l.sender.flush(deadline)));
      unsent = left.reduce((a, b) => a + b, 0);
      if (unsent > 0) log.error('shutdown grace period over with messages unsent; the next leader resyncs', { unsent, graceMs });
      else log.info('flushed every pending message');
    }
    await elector?.stop();
    const left = await Promise.all(allLanes.map((l) => l.sender.stop()));
    unsent = Math.max(unsent, left.reduce((n, l) => n + l.length, 0));
    await server?.close();
    await api.close?.();
    leading = false;
    metrics.leader.set(0);
    log.info('forwarder stopped', { unsent });
    return { unsent };
  }

  return {
    config,
    ready,
    metrics,
    get url() {
      return server?.url;
    },
    isLeader: () => leading,
    health,
    readiness,
    pending: () => coalesced() + buffered(),
    pendingByQueue: () => new Map(allLanes.map((l) => [l.url, l.coalescer.size + l.sender.depth + l.resync.pending])),
    stop: (options) => (stopped ??= stop(options)),
  } satisfies Forwarder as Forwarder;

  function defaultKubeConfig(): KubeConfig {
    const kc = new KubeConfig();
    kc.loadFromDefault();
    return kc;
  }
}

