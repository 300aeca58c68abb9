/**
 * Stage src/core/controls/ — the per-controller controls at run time: the shared rate limit
 * (this file) and the timers' requeue chains (timer-tick.ts); their declarations are the
 * author's (controller/rate-limit.ts, controller/timer.ts). Guarantees: a control only gates or
 * adds follow-ups around one key's reconcile (an excess is requeued, never failed), and is
 * called by the handler, never the reverse.
 *
 * The shared count of a controller's rate limit (controller/rate-limit.ts) on a Lease in the cluster:
 * `coordination.k8s.io/v1` Lease `operless-rate-<controller>` in the limit's namespace, whose
 * annotation `operless.dev/rate-window` holds `<second>/<admitted>`. One per cluster: each
 * cluster the function serves has its own count.
 *
 * Taking a place reads the Lease and, when the window has room, writes the next count guarded
 * by the resourceVersion read (a merge patch with `metadata.resourceVersion`; a create for the
 * first one). A 409 — another invocation took a place in between, or created the Lease first —
 * reads again; after `RATE_LIMIT_ROUNDS` lost rounds the key waits as if the window were full.
 * So every admitted reconcile was counted in the window it ran in, and no window counts more
 * than `perSecond`. Any other failure (the API server down, RBAC refusing Leases) rejects:
 * the caller treats it as a failed reconcile (retried with backoff, then the DLQ with the
 * error), never as admitted.
 *
 * Cost: a GET and a write per admitted reconcile, one more round per conflict.
 */
import type { ReconcileMessage } from '../../contract/message.ts';
import { errorMessage, type Logger } from '../../observability/log.ts';
import type { BoundKubeClient } from '../../kube/client.ts';
import { isConflict } from '../../kube/errors.ts';
import { LEASES } from '../../kube/kinds.ts';
import type { KubeObject } from '../../kube/types.ts';
import type { Controller } from '../controller/controller.ts';
import { decideFollowUp, rateLimited, type FollowUp } from '../reconcile/followup.ts';
import type { Metrics } from '../reconcile/metrics.ts';
import { admission, rateLimitedDelaySeconds, type Admission, type RateWindow, type ResolvedRateLimit } from '../controller/rate-limit.ts';

export const RATE_WINDOW_ANNOTATION = 'operless.dev/rate-window';
/** Rounds of read-and-write lost to other invocations before a key gives up its turn. */
export const RATE_LIMIT_ROUNDS = 8;

/** The Lease that holds a controller's count. */
export function rateLeaseName(controllerName: string): string {
  return `operless-rate-${controllerName}`;
}

const WINDOW = /^(\d{1,15})\/(\d{1,7})$/;

/** The window stored on a Lease; undefined when it has none or one that does not parse (then counting starts again). Pure. */
export function storedWindow(lease: KubeObject | undefined): RateWindow | undefined {
  const match = WINDOW.exec(lease?.metadata.annotations?.[RATE_WINDOW_ANNOTATION] ?? '');
  return match ? { second: Number(match[1]), admitted: Number(match[2]) } : undefined;
}

/** Takes a place in the current window for one reconcile of `controllerName`, or says how long to wait. */
export async function takeRatePlace(client: BoundKubeClient, controllerName: string, limit: ResolvedRateLimit, now: () => number): Promise<Admission> {
  const name = rateLeaseName(controllerName);
  for (let round = 0; round < RATE_LIMIT_ROUNDS; round++) {
    const lease = await client.get(LEASES, name, limit.namespace);
    const decided = admission(storedWindow(lease), now(), limit.perSecond);
    if (!decided.admit) return decided;
    const annotations = { [RATE_WINDOW_ANNOTATION]: `${decided.next.second}/${decided.next.admitted}` };
    try {
      if (lease) await client.mergePatch(LEASES, name, limit.namespace, { metadata: { resourceVersion: lease.metadata.resourceVersion, annotations } });
      else
        await client.create(LEASES, {
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: { name, namespace: limit.namespace, annotations },
          spec: {},
        });
      return decided;
    } catch (err) {
      if (!isConflict(err)) throw err;
    }
  }
  return { admit: false, waitMs: 0 };
}

/** What the gate needs from its invocation. */
export interface RateGateRun {
  readonly metrics: Metrics;
  readonly now: () => number;
  readonly random: () => number;
  readonly maxDelaySeconds: number;
}

/** The gate's answer: the key's follow-up when it may not start now, else the window it was counted in (when limited). */
export type RateGate = { readonly followUp: FollowUp } | { readonly followUp?: undefined; readonly window?: number };

/**
 * The follow-up of a key its controller's rate limit does not let start now (handed back,
 * same attempt), or of a failure to reach the count (a failed reconcile: retried with backoff,
 * the DLQ after `maxAttempts`); else the second whose count admitted it (it goes on the
 * reconcile's log lines as `rateWindow`).
 */
export async function rateLimitGate(
  run: RateGateRun,
  controller: Controller<KubeObject>,
  message: ReconcileMessage,
  client: BoundKubeClient,
  log: Logger,
): Promise<RateGate> {
  const limit = controller.rateLimit;
  if (!limit) return {};
  let place: Admission;
  try {
    place = await takeRatePlace(client, controller.name, limit, run.now);
  } catch (error) {
    log.error('could not take a place in the rate limit (its Lease); retrying the key like a failed reconcile', {
      lease: `${limit.namespace}/${rateLeaseName(controller.name)}`,
      error: errorMessage(error),
    });
    const wrapped = new Error(`rate limit Lease ${limit.namespace}/${rateLeaseName(controller.name)}: ${errorMessage(error)}`);
    return {
      followUp: decideFollowUp({
        message,
        ending: { type: 'error', error: wrapped },
        policy: controller.retry,
        now: run.now(),
        random: run.random,
        maxDelaySeconds: run.maxDelaySeconds,
      }),
    };
  }
  if (place.admit) return { window: place.next.second };
  const delaySeconds = rateLimitedDelaySeconds(place.waitMs, run.random);
  log.info('rate limit reached for this second; handing the key back (not an attempt)', { perSecond: limit.perSecond, delaySeconds });
  run.metrics.deferred(controller.name, 'rate_limited');
  return { followUp: rateLimited(message, delaySeconds) };
}
