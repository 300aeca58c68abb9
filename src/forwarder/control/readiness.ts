/**
 * The forwarder's health and readiness, decided from its state: `/healthz` fails only on a
 * fatal startup error; `/readyz` names every reason the forwarder is not ready, in a fixed
 * order (fatal, starting, shutting down, then — while leading — watches not synced and the
 * lanes' faults, then unreachable queues whoever leads). A watch waiting for its kind to be
 * served (its CRD not installed, or deleted) does not make the forwarder not ready: the
 * forwarder serves every other kind meanwhile, and a CRD installed later is watched then.
 *
 * `/readyz/webhooks` (webhook readiness) is decided apart: the webhook endpoint serves whatever
 * the queues, the watches or the leader election say, so a queue outage never takes the
 * webhook Service's endpoints away; it is not ready only while the endpoint is not serving yet
 * or drains on shutdown (then the endpoints controller takes the pod out while it still answers).
 *
 * Pure: the same state gives the same answer.
 */
import type { Check } from './server.ts';

export interface ForwarderState {
  /** The startup error, if startup failed. */
  readonly fatal: string | undefined;
  readonly started: boolean;
  readonly stopping: boolean;
  readonly leading: boolean;
  /** The paths of the watch streams that have not listed yet (a stream waiting for its kind to be served — its CRD is missing — is not among them: docs/forwarder.md). */
  readonly unsyncedPaths: readonly string[];
  /** What the lanes say against readiness (lanes.ts: their faults while leading, then unreachable queues). */
  readonly laneReasons: readonly string[];
}

export function healthOf(fatal: string | undefined): Check {
  return fatal ? { ok: false, reasons: [fatal] } : { ok: true, reasons: [] };
}

export function readinessOf(state: ForwarderState): Check {
  const reasons: string[] = [];
  if (state.fatal) reasons.push(state.fatal);
  if (!state.started) reasons.push('starting: resolving watches and the leader election');
  if (state.stopping) reasons.push('shutting down');
  if (state.leading && state.unsyncedPaths.length > 0) reasons.push(`watches not synced yet: ${state.unsyncedPaths.join(', ')}`);
  reasons.push(...state.laneReasons);
  return { ok: reasons.length === 0, reasons };
}

/** What the webhook readiness is decided from. */
export interface WebhookState {
  readonly fatal: string | undefined;
  /** The endpoint listens. */
  readonly serving: boolean;
  /** Shutdown began: the endpoint drains (still answers) until it closes. */
  readonly draining: boolean;
}

export function webhookReadinessOf(state: WebhookState): Check {
  const reasons: string[] = [];
  if (state.fatal) reasons.push(state.fatal);
  if (!state.serving) reasons.push('starting: the webhook endpoint is not serving yet');
  if (state.draining) reasons.push('shutting down: the webhook endpoint drains its requests before it closes');
  return { ok: reasons.length === 0, reasons };
}
