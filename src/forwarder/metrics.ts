/**
 * The forwarder's Prometheus metrics (prom-client), one registry per forwarder instance so
 * several forwarders can run in one process (tests, the local dev loop).
 *
 * Names follow Prometheus conventions with the `operless_forwarder_` prefix; every metric
 * is documented in docs/forwarder.md. Send-side metrics carry a `queue` label (the queue name,
 * see queues.ts) so each queue's health shows on its own.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export interface ForwarderMetrics {
  readonly registry: Registry;
  readonly eventsReceived: Counter<'kind' | 'type'>;
  readonly eventsFiltered: Counter<'kind'>;
  /** Changes dropped at routing because the message they imply is one the contract refuses (router.ts DROP_REASONS). */
  readonly eventsDropped: Counter<'reason'>;
  readonly messagesEnqueued: Counter<'kind' | 'reason'>;
  readonly messagesCoalesced: Counter;
  readonly messagesSent: Counter<'reason' | 'queue'>;
  readonly sendErrors: Counter<'kind' | 'queue'>;
  readonly messagesDropped: Counter<'cause' | 'queue'>;
  readonly bufferDepth: Gauge<'queue'>;
  readonly resyncPending: Gauge<'queue'>;
  readonly watchRestarts: Counter<'kind' | 'cause'>;
  readonly relists: Counter<'kind' | 'cause'>;
  readonly watchesSynced: Gauge;
  /** Watch streams by kind, role and state: listing (not listed yet), waiting (the kind is not served: its CRD is missing), watching. */
  readonly watchStreams: Gauge<'kind' | 'role' | 'state'>;
  readonly queueReachable: Gauge<'queue'>;
  readonly coalescingWindow: Gauge<'queue'>;
  readonly leader: Gauge;
  readonly forwardLag: Histogram<'queue'>;
  /** Webhook answers by alias, route ('' when the path is no webhook) and status code. */
  readonly webhookRequests: Counter<'function' | 'route' | 'code'>;
  /** Webhook connections closed on accept (webhooks.limits.maxConnections). */
  readonly webhookConnectionsRefused: Counter;
  /** Changes of the webhook serving certificate files, by result (reloaded, invalid, unreadable). */
  readonly webhookCertificateReloads: Counter<'result'>;
}

export function createForwarderMetrics(options: { defaultMetrics?: boolean } = {}): ForwarderMetrics {
  const registry = new Registry();
  if (options.defaultMetrics) collectDefaultMetrics({ register: registry });
  const registers = [registry];
  return {
    registry,
    eventsReceived: new Counter({
      name: 'operless_forwarder_events_received_total',
      help: 'Watch events received (and changes found by relists), by kind and type.',
      labelNames: ['kind', 'type'],
      registers,
    }),
    eventsFiltered: new Counter({
      name: 'operless_forwarder_events_filtered_total',
      help: 'Changes dropped by predicates (e.g. status-only updates of primaries), by kind.',
      labelNames: ['kind'],
      registers,
    }),
    eventsDropped: new Counter({
      name: 'operless_forwarder_events_dropped_total',
      help: 'Reconcile requests dropped at routing because the contract refuses the message (e.g. an owner reference naming an invalid name), by reason: invalid_name, invalid_namespace, invalid_uid, invalid_other. Each is logged once (WARN) with the object.',
      labelNames: ['reason'],
      registers,
    }),
    messagesEnqueued: new Counter({
      name: 'operless_forwarder_messages_enqueued_total',
      help: 'Reconcile requests produced, by target kind and reason (before coalescing).',
      labelNames: ['kind', 'reason'],
      registers,
    }),
    messagesCoalesced: new Counter({
      name: 'operless_forwarder_messages_coalesced_total',
      help: 'Reconcile requests merged into one already pending for the same object.',
      registers,
    }),
    messagesSent: new Counter({
      name: 'operless_forwarder_messages_sent_total',
      help: 'Messages accepted by the queue, by reason and queue.',
      labelNames: ['reason', 'queue'],
      registers,
    }),
    sendErrors: new Counter({
      name: 'operless_forwarder_send_errors_total',
      help: 'Send failures: kind="request" (whole SendMessageBatch failed), "entry" (one entry rejected) or "internal" (the send loop itself failed unexpectedly; it backs off and goes on), by queue.',
      labelNames: ['kind', 'queue'],
      registers,
    }),
    messagesDropped: new Counter({
      name: 'operless_forwarder_messages_dropped_total',
      help: 'Messages dropped: cause="overflow" (buffer bound reached; a full resync follows), "rejected" (SQS kept rejecting the entry) or "invalid" (the message failed the contract before sending), by queue.',
      labelNames: ['cause', 'queue'],
      registers,
    }),
    bufferDepth: new Gauge({
      name: 'operless_forwarder_buffer_depth',
      help: 'Messages waiting to be sent (coalescing window plus send buffer), by queue.',
      labelNames: ['queue'],
      registers,
    }),
    resyncPending: new Gauge({
      name: 'operless_forwarder_resync_pending',
      help: 'Objects of resyncs in progress not yet handed to the send buffer (they join it as room frees up), by queue.',
      labelNames: ['queue'],
      registers,
    }),
    watchRestarts: new Counter({
      name: 'operless_forwarder_watch_restarts_total',
      help: 'Watch streams restarted, by kind and cause (closed, silence, error).',
      labelNames: ['kind', 'cause'],
      registers,
    }),
    relists: new Counter({
      name: 'operless_forwarder_relists_total',
      help: 'Full LISTs after the first, by kind and cause (gone = 410 Gone, error, resync).',
      labelNames: ['kind', 'cause'],
      registers,
    }),
    watchesSynced: new Gauge({
      name: 'operless_forwarder_watches_synced',
      help: '1 when every watch stream finished its initial list or waits for its kind to be served (operless_forwarder_watch_streams{state="waiting"}), else 0.',
      registers,
    }),
    watchStreams: new Gauge({
      name: 'operless_forwarder_watch_streams',
      help: 'Watch streams of the leader, by kind, role and state: listing (not listed yet), waiting (the kind is not served, e.g. its CRD is not installed or was deleted: polled until it is), watching.',
      labelNames: ['kind', 'role', 'state'],
      registers,
    }),
    coalescingWindow: new Gauge({
      name: 'operless_forwarder_coalescing_window_seconds',
      help: 'The quiet window new coalescing windows get, by queue: coalesceWindowMs, widened to the estimated queue wait while the queue is backlogged (at most coalesceMaxWindowMs).',
      labelNames: ['queue'],
      registers,
    }),
    queueReachable: new Gauge({
      name: 'operless_forwarder_queue_reachable',
      help: '1 when the last send or probe reached the queue, else 0, by queue.',
      labelNames: ['queue'],
      registers,
    }),
    leader: new Gauge({ name: 'operless_forwarder_leader', help: '1 when this replica holds the leader Lease (or election is off), else 0.', registers }),
    forwardLag: new Histogram({
      name: 'operless_forwarder_forward_lag_seconds',
      help: 'From observing a change to the queue accepting its message, by queue.',
      labelNames: ['queue'],
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300],
      registers,
    }),
    webhookRequests: new Counter({
      name: 'operless_forwarder_webhook_requests_total',
      help: 'Webhook requests answered, by function alias, route ("" when the path is no webhook) and HTTP status code (429: past the in-flight bounds, 413: past the route\'s body limit).',
      labelNames: ['function', 'route', 'code'],
      registers,
    }),
    webhookCertificateReloads: new Counter({
      name: 'operless_forwarder_webhook_certificate_reloads_total',
      help: 'Changes of the webhook serving certificate files, by result: reloaded (served from the next handshake), invalid (not a certificate and key that belong together: the previous pair is still served), unreadable (likewise).',
      labelNames: ['result'],
      registers,
    }),
    webhookConnectionsRefused: new Counter({
      name: 'operless_forwarder_webhook_connections_refused_total',
      help: 'Webhook connections closed on accept: webhooks.limits.maxConnections were open.',
      registers,
    }),
  };
}
