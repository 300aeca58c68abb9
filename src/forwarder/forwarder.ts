/**
 * The forwarder's composition root: it wires the pipeline's stages together — watch streams
 * (source/: list+watch per kind and namespace, the snapshot store) → router (route/:
 * predicates, owner mapping) → coalescer (coalesce/: per-key window, widened by the backlog) →
 * lanes (sink/: bounded buffer, sender, resync feed; the intake hands routed changes to them)
 * — under leader election, with probes and metrics (control/). The decisions live in the
 * stages; this file only builds them, and runs start-up, leadership changes and shutdown.
 *
 * Queues: each primary kind sends to its queue (`queueUrl`, default `queue.url`), an owned
 * object's message to its owner's kind's queue. Every distinct queue has its own lane — a
 * coalescer and a sender with its own bounded buffer, backoff and reachability — so one
 * queue's outage never delays another's messages; `/readyz` names the queue at fault. While a
 * lane's queue is backlogged its coalescing window widens to the estimated wait (coalesce/backlog.ts).
 * A resync (on start, on gaining leadership, after an overflow) does not go through the buffer at
 * once: each lane feeds it in as room frees up (sink/resync-feed.ts), behind live changes, so a resync
 * of any size never overflows the buffer and an overflow's healing resync cannot overflow again.
 *
 * `startForwarder(config, deps?)` runs it in-process (tests, the local dev loop);
 * `main.ts` is the container entry point around the same function.
 *
 * Guarantees:
 * - only the leader (or the only replica when election is off) sends; on gaining leadership
 *   it lists every kind and forwards every primary (`Resync`) when `resyncOnStart` is on, so
 *   changes made while no leader ran are not missed — except a warm standby
 *   (`leaderElection.warmStandby`), whose followers watch too and which takes over from its
 *   stores without a LIST, forwarding what the old leader's watermark does not cover
 *   (source/standby.ts, control/handover.ts);
 * - losing leadership stops sending at once and discards the buffer and the resync feed (the
 *   next leader resyncs);
 * - no timer can take the process down: the backlog sampler's and the probes' failures are
 *   logged and counted (`send_errors_total{kind="internal"}`), the sender's loop handles its own
 *   (sink/sender.ts);
 * - `stop()` stops watching, sends everything pending within the grace period, releases
 *   the lease, closes the probe server and the API server connections, and reports how
 *   many messages were left unsent; the webhook endpoint keeps answering for
 *   `webhooks.drainSeconds` (within the grace period) and closes last;
 * - the webhook endpoint's readiness is its own (`/readyz/webhooks`): an unreachable queue or
 *   unsynced watch never makes it not ready;
 * - an invalid config throws `ConfigError` synchronously; startup failures (unknown
 *   kind, port in use) reject `ready` with a message saying what to do.
 */
import { KubeConfig } from '@kubernetes/client-node/dist/config.js';
import { createKubeApi, type KubeApi } from '../kube/api.ts';
import { createLogger, errorMessage, type Logger } from '../observability/log.ts';
import type { QueuePort } from '../queue/port.ts';
import { createEventBusPort } from '../queue/eventbridge.ts';
import { createSqsQueue } from '../queue/sqs.ts';
import { isValidatedConfig, parseConfig, regionOfQueueUrl, type ForwarderConfig, type ForwarderConfigInput, type ForwarderEnv } from './config/config.ts';
import { LeaderElector } from './control/leader.ts';
import { healthOf, readinessOf, webhookReadinessOf } from './control/readiness.ts';
import { startProbeServer, type Check, type ProbeServer } from './control/server.ts';
import { startWebhookEndpoint } from './webhook/endpoint.ts';
import type { WebhookInvoker, WebhookServer } from './webhook/server.ts';
import { LeadershipTerm } from './control/term.ts';
import { createForwarderMetrics, type ForwarderMetrics } from './metrics.ts';
import { Intake } from './intake.ts';
import { Lanes } from './sink/lanes.ts';
import { eventBusOf, sinkRoutes } from './sink/destinations.ts';
import { queueLabels, type QueueRoutes } from './sink/queues.ts';
import { resolveWatches, type ResolvedWatch } from './source/watches.ts';
import { WarmStandby } from './source/standby.ts';
import { WatchStreams, type StreamHandlers } from './source/streams.ts';
import { decodeWatermark } from './control/handover.ts';
import type { Lease } from '../kube/lease.ts';

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
  /** How the webhook endpoint invokes functions (default: the AWS SDK's Lambda client). */
  readonly invokeWebhook?: WebhookInvoker;
}

export interface Forwarder {
  readonly config: ForwarderConfig;
  /** Resolves once the forwarder is running: leader with every watch synced or waiting for its kind to be served (its CRD missing), or a standing-by follower. */
  readonly ready: Promise<void>;
  readonly metrics: ForwarderMetrics;
  /** Base URL of the probe server (after `ready`), e.g. http://127.0.0.1:8080. */
  readonly url: string | undefined;
  /** Base URL of the webhook endpoint when `webhooks.enabled` (after `ready`), e.g. https://127.0.0.1:9443. */
  readonly webhookUrl: string | undefined;
  isLeader(): boolean;
  health(): Check;
  readiness(): Check;
  /** The webhook endpoint's own readiness (`/readyz/webhooks`): serving and not draining, whatever the queues say. */
  webhookReadiness(): Check;
  /** Messages not yet accepted by their queue (coalescing window + send buffer + the batch in flight + resyncs not yet fed), over every queue. */
  pending(): number;
  /** Messages waiting per queue URL. */
  pendingByQueue(): ReadonlyMap<string, number>;
  /** Stops; flushes pending messages for up to `graceMs` (default config.shutdownGraceMs). */
  stop(options?: { graceMs?: number }): Promise<{ unsent: number }>;
}

export function startForwarder(input: ForwarderConfig | ForwarderConfigInput, deps: ForwarderDeps = {}): Forwarder {
  const config = isValidatedConfig(input) ? input : parseConfig(input, deps.env ?? {}, 'startForwarder config');
  return new ForwarderProcess(config, deps).handle();
}

/** The composition: the stages, the lanes and the control objects of one forwarder, and its start and stop. */
class ForwarderProcess {
  readonly config: ForwarderConfig;
  readonly metrics: ForwarderMetrics;
  readonly ready: Promise<void>;
  readonly #log: Logger;
  readonly #now: () => number;
  readonly #api: KubeApi;
  readonly #routes: QueueRoutes;
  readonly #lanes: Lanes;
  readonly #streams: WatchStreams;
  readonly #intake: Intake;
  readonly #term = new LeadershipTerm();
  /** Aborted by stop(): start-up requests (discovery) do not hold a shutdown. */
  readonly #starting = new AbortController();
  #watches: ResolvedWatch[] = [];
  #started = false;
  #fatal: string | undefined;
  #server: ProbeServer | undefined;
  /** Served by every replica, leader or not (config `webhooks`). */
  #webhooks: WebhookServer | undefined;
  readonly #invokeWebhook: WebhookInvoker | undefined;
  #elector: LeaderElector | undefined;
  /** With leader election and `leaderElection.warmStandby`: followers watch too (source/standby.ts). */
  readonly #standby: WarmStandby | undefined;
  #stopped: Promise<{ unsent: number }> | undefined;

  constructor(config: ForwarderConfig, deps: ForwarderDeps) {
    this.config = config;
    this.#now = deps.now ?? Date.now;
    this.#log = (deps.logger ?? createLogger()).child({ component: 'forwarder', cluster: config.clusterId });
    this.metrics = createForwarderMetrics({ defaultMetrics: deps.processMetrics ?? false });
    this.#invokeWebhook = deps.invokeWebhook;
    this.#api = createKubeApi(deps.kubeConfig ?? defaultKubeConfig(), { userAgent: 'operless-forwarder' });
    this.#routes = sinkRoutes(config);
    const timeouts = { connectTimeoutMs: config.send.connectTimeoutMs, requestTimeoutMs: config.send.requestTimeoutMs };
    const portFor = (url: string): QueuePort => {
      const injected = deps.queues?.(url) ?? deps.queue;
      if (injected) return injected;
      const bus = eventBusOf(url);
      if (bus !== undefined) {
        const { source, endpoint } = config.eventBus;
        return createEventBusPort({ bus, source, region: config.queue.region, ...(endpoint ? { endpoint } : {}), timeouts });
      }
      return createSqsQueue({
        queueUrl: url,
        region: regionOfQueueUrl(url) ?? config.queue.region,
        ...(config.queue.endpoint ? { endpoint: config.queue.endpoint } : {}),
        timeouts,
      });
    };
    const common = { metrics: this.metrics, log: this.#log, now: this.#now };
    this.#lanes = new Lanes({
      ...common,
      routes: this.#routes,
      labels: queueLabels(this.#routes.urls),
      portFor,
      config,
      onOverflowDrained: (url) => this.#resyncQueue(url),
    });
    this.#streams = new WatchStreams({ api: this.#api, config, metrics: this.metrics, log: this.#log });
    this.#standby = config.leaderElection.enabled && config.leaderElection.warmStandby ? new WarmStandby() : undefined;
    this.#intake = new Intake({
      ...common,
      clusterId: config.clusterId,
      lanes: this.#lanes,
      watches: () => this.#watches,
      isLeading: () => this.#term.leading,
    });
    this.ready = this.#start(deps.serve !== false);
    this.ready.catch((err: unknown) => {
      if (this.#starting.signal.aborted) return; // stop() during start-up: not a failure
      this.#fatal = `startup failed: ${errorMessage(err)}`;
      this.#log.error(this.#fatal);
    });
  }

  handle(): Forwarder {
    const url = () => this.#server?.url;
    const webhookUrl = () => this.#webhooks?.url;
    return {
      config: this.config,
      ready: this.ready,
      metrics: this.metrics,
      get url() {
        return url();
      },
      get webhookUrl() {
        return webhookUrl();
      },
      isLeader: () => this.#term.leading,
      health: () => healthOf(this.#fatal),
      readiness: () => this.#readiness(),
      webhookReadiness: () => this.#webhookReadiness(),
      pending: () => this.#lanes.pending(),
      pendingByQueue: () => this.#lanes.pendingByQueue(),
      stop: (options) => (this.#stopped ??= this.#stop(options?.graceMs ?? this.config.shutdownGraceMs)),
    };
  }

  #readiness(): Check {
    const leading = this.#term.leading;
    return readinessOf({
      fatal: this.#fatal,
      started: this.#started,
      stopping: this.#term.stopping,
      leading,
      unsyncedPaths: leading ? this.#streams.unsyncedPaths() : [],
      laneReasons: this.#lanes.readinessReasons(leading),
    });
  }

  #webhookReadiness(): Check {
    return webhookReadinessOf({ fatal: this.#fatal, serving: this.#webhooks !== undefined, draining: this.#term.stopping });
  }

  async #start(serve: boolean): Promise<void> {
    const { config } = this;
    if (serve) {
      this.#server = await startProbeServer({
        host: config.server.host,
        port: config.server.port,
        health: () => healthOf(this.#fatal),
        readiness: () => this.#readiness(),
        registry: this.metrics.registry,
        ...(config.webhooks.enabled ? { webhookReadiness: () => this.#webhookReadiness() } : {}),
      });
      if (config.webhooks.enabled) this.#webhooks = await startWebhookEndpoint(config.webhooks, this.#log, this.#invokeWebhook, this.metrics);
    }
    this.#watches = await resolveWatches(this.#api, config.watches, this.#starting.signal, config.namespaces);
    for (const w of this.#watches) {
      this.#log.info('configured watch', {
        role: w.role,
        apiVersion: w.apiVersion,
        kind: w.kind,
        plural: w.plural,
        namespaced: w.namespaced,
        namespaces: w.namespaces.length > 0 ? w.namespaces : 'all',
        labelSelector: w.labelSelector,
        triggers: w.triggers,
      });
      if (w.role !== 'primary' && w.apiVersion === 'v1' && w.kind === 'Secret' && w.namespaces.length === 0 && !w.labelSelector) {
        // The privilege is the RBAC's (the chart refuses an unscoped owned or related Secret watch); here, say what is read.
        this.#log.warn(
          `${w.role === 'owned' ? 'an owned' : 'a related'} watch of Secrets with neither namespaces nor a labelSelector reads every Secret this identity may read (the chart refuses it unscoped; only digests are kept)`,
          { role: w.role, kind: w.kind },
        );
      }
    }
    if (this.#term.stopping) return;
    this.#lanes.startTimers(() => this.#term.leading);
    // A warm standby watches from the start, leader or not; a cold one only while it leads.
    if (this.#standby) this.#streams.start(this.#watches, this.#handlers());
    if (config.leaderElection.enabled) await this.#elect();
    else this.#becameLeader();
    this.#started = true;
    await this.#term.untilSynced(() => this.#streams.synced());
    if (this.#term.stopping) return;
    this.#log.info('forwarder running', { leader: this.#term.leading, queues: this.#routes.urls, probes: this.#server?.url });
  }

  /** Joins the leader election; resolves after its first round. */
  async #elect(): Promise<void> {
    const le = this.config.leaderElection;
    this.#elector = new LeaderElector({
      api: this.#api,
      namespace: le.namespace,
      name: le.leaseName,
      identity: le.identity,
      leaseDurationSeconds: le.leaseDurationSeconds,
      renewDeadlineSeconds: le.renewDeadlineSeconds,
      retryPeriodSeconds: le.retryPeriodSeconds,
      log: this.#log,
      now: this.#now,
      onStartedLeading: (previous) => this.#becameLeader(previous),
      onStoppedLeading: () => this.#lostLeadership(),
      ...(this.#standby
        ? {
            onLeaseRead: (lease: Lease) => this.#standby?.confirm(decodeWatermark(lease).watermark),
            watermark: () => this.#standby?.watermark(this.#streams.all, this.#term.leading && this.#drained()),
          }
        : {}),
    });
    this.#elector.start();
    await this.#elector.decided;
  }

  /**
   * Nothing this replica saw waits to be sent: no message in a window, a buffer, a batch in
   * flight or a resync feed, and no lane dropped messages on overflow that a resync has not
   * re-sent yet (nor keeps failing). Only then may its watermark advance.
   */
  #drained(): boolean {
    return this.#lanes.pending() === 0 && this.#lanes.readinessReasons(true).length === 0;
  }

  /** What the streams' lists and events go to: the intake, and the warm standby's journal while following. */
  #handlers(): StreamHandlers {
    return {
      onList: (w, result, stream) => {
        this.#standby?.listed(stream, result);
        this.#intake.list(w, result, stream);
      },
      onChange: (w, change, stream) => {
        this.#standby?.changed(stream, change);
        this.#intake.change(w, change, stream);
      },
    };
  }

  #becameLeader(previous?: Lease): void {
    this.#term.begin();
    this.metrics.leader.set(1);
    this.#lanes.setActive(true);
    if (this.#term.stopping) return;
    if (this.#standby) this.#takeOver(this.#standby, previous);
    else this.#streams.start(this.#watches, this.#handlers());
    this.#streams.synced().then(
      () => {
        if (this.#term.leading) this.metrics.watchesSynced.set(1);
      },
      () => {},
    );
  }

  /**
   * A warm takeover: each stream that listed forwards again what it saw after the previous
   * leader's watermark, or resyncs from its store when it cannot tell (source/standby.ts); a
   * stream that has not listed yet resyncs with its first list. No LIST either way.
   */
  #takeOver(standby: WarmStandby, previous: Lease | undefined): void {
    const { watermark, problem } = decodeWatermark(previous);
    if (problem) this.#log.warn("the previous leader's watermark on the Lease cannot be read; resyncing every primary from the warm store", { problem });
    const plan = standby.takeover(this.#streams.all, watermark);
    let replayed = 0;
    const resync: { stream: string; reason: string }[] = [];
    for (const { stream, takeover } of plan) {
      if (takeover?.action === 'replay' && takeover.gap)
        resync.push({ stream: stream.path, reason: "listed after the previous leader's watermark: replaying what its store changed since" });
      if (takeover?.action === 'replay') {
        for (const change of takeover.changes) this.#intake.change(stream.watch, change, stream.path);
        replayed += takeover.changes.length;
      } else if (takeover?.action === 'resync') resync.push({ stream: stream.path, reason: takeover.reason });
    }
    // A primary stream that cannot tell resyncs itself; an owned or related one that cannot tell, or that
    // listed after the watermark (a child deleted in between is not known), resyncs every primary (their owners and referrers).
    const everyPrimary = plan.some(
      ({ stream, takeover }) => stream.watch.role !== 'primary' && (takeover?.action === 'resync' || (takeover?.action === 'replay' && takeover.gap)),
    );
    const resyncing = plan.filter(
      ({ stream, takeover }) => stream.watch.role === 'primary' && stream.synced && (everyPrimary || takeover?.action === 'resync'),
    );
    if (this.config.resyncOnStart) {
      for (const { stream } of resyncing) {
        this.#intake.list(
          stream.watch,
          { changes: [], listed: stream.snapshots(), first: false, resync: true, resourceVersion: stream.resourceVersion },
          stream.path,
        );
      }
    }
    this.#log.info('took over with a warm store: no relist', {
      previousLeader: previous?.spec?.holderIdentity ?? '',
      replayedChanges: replayed,
      resyncedFromStore: this.config.resyncOnStart ? resyncing.map(({ stream }) => stream.path) : [],
      resyncReasons: resync,
      notListedYet: plan.filter(({ takeover }) => takeover === undefined).map(({ stream }) => stream.path),
    });
  }

  #lostLeadership(): void {
    this.#term.end('lost');
    this.metrics.leader.set(0);
    this.#lanes.setActive(false);
    if (this.#standby) this.#standby.follow(this.#streams.all);
    else void this.#stopStreams();
    const dropped = this.#lanes.discard();
    if (dropped > 0) this.#log.info('discarded pending messages on losing leadership; the new leader resyncs', { dropped });
  }

  /** A lane's buffer drained after an overflow: resync the primaries that send to its queue (live or bulk), so the dropped keys are sent after all. */
  #resyncQueue(url: string): void {
    const kinds = this.#streams.resyncPrimaries((watch) => this.#routes.queueFor(watch) === url || this.#routes.bulkQueueFor(watch) === url);
    this.#log.info('send buffer drained after an overflow; resyncing the primaries of this queue so dropped changes are sent', { queue: url, kinds });
  }

  async #stopStreams(): Promise<void> {
    const stopping = this.#streams.stop();
    this.metrics.watchesSynced.set(0);
    await stopping;
  }

  async #stop(graceMs: number): Promise<{ unsent: number }> {
    this.#term.end('stopping');
    this.#lanes.halt();
    this.#starting.abort();
    const deadline = this.#now() + graceMs;
    // The webhook endpoint drains within the grace period: it answers (closing each connection) while
    // /readyz/webhooks says not ready, so the Service takes this pod out before the listener closes.
    this.#webhooks?.drain();
    const drainUntil = this.#now() + Math.min(graceMs, this.config.webhooks.drainSeconds * 1000);
    await this.ready.catch(() => {});
    this.#lanes.stopTimers();
    const streams = this.#streams.all;
    await this.#stopStreams();
    this.#lanes.cancelFlush();
    let unsent = 0;
    if (this.#term.leading) {
      unsent = await this.#lanes.flush(deadline);
      // The release carries the final watermark: a successor replays nothing this replica sent.
      if (unsent === 0) this.#standby?.watermark(streams, this.#drained());
      if (unsent > 0) this.#log.error('shutdown grace period over with messages unsent; the next leader resyncs', { unsent, graceMs });
      else this.#log.info('flushed every pending message');
    }
    await this.#elector?.stop();
    unsent = Math.max(unsent, await this.#lanes.stop());
    if (this.#webhooks) {
      const left = drainUntil - this.#now();
      if (left > 0) await new Promise((resolve) => setTimeout(resolve, left));
      await this.#webhooks.close();
    }
    // Last: the probes say why (shutting down, draining) until the end.
    await this.#server?.close();
    await this.#api.close?.();
    this.#term.stopped();
    this.metrics.leader.set(0);
    this.#log.info('forwarder stopped', { unsent });
    return { unsent };
  }
}

function defaultKubeConfig(): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromDefault();
  return kc;
}
