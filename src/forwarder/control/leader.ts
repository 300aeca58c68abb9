/**
 * Leader election on a `coordination.k8s.io/v1` Lease, with client-go's rules and
 * controller-runtime's default timings (lease 15 s, renew deadline 10 s, retry 2 s):
 * - the leader renews every retry period; if it cannot renew for `renewDeadline` it steps
 *   down (stops sending) before anyone else may take over (renewDeadline < leaseDuration);
 * - a candidate takes over only after it has seen the SAME lease record unchanged for a
 *   full lease duration on its OWN clock (no trust in other nodes' clocks);
 * - every write is guarded by the lease's resourceVersion, so two candidates can never
 *   both win one round;
 * - on graceful stop the leader releases the lease (empty holder, duration 1 s, as
 *   client-go's ReleaseOnCancel) so a successor starts at once instead of waiting for expiry;
 *   a renewal that stop() cut but the API server applied (409 on release) is followed by one
 *   fresh read, and the lease is released if we still hold it.
 * - every write (create, acquire, renew, release) carries the leader's watermark when it has
 *   one (`watermark`, control/handover.ts), and drops a previous holder's; a follower hears the
 *   Lease of every round (`onLeaseRead`), and `onStartedLeading` gets the Lease as it was
 *   before this replica took it (the previous holder's last watermark);
 * - no request can outlive the rules above: each has a timeout of half the renew deadline,
 *   and a leader's round is cut when its renew deadline passes (it steps down then, even
 *   with a request still hanging), a candidate's after one renew deadline; `stop()` aborts
 *   whatever is in flight, and the release that follows is bounded by the same timeout.
 *
 * The decision is a pure function (`leaseDecision`), unit-tested; `LeaderElector` is the
 * thin I/O loop around it.
 */
import { errorMessage, type Logger } from '../../observability/log.ts';
import { pause } from '../../retry/backoff.ts';
import { KubeApiError, type KubeApi } from '../../kube/api.ts';
import { leaseClient, leasePath, type Lease, type LeaseClient, type LeaseSpec } from '../../kube/lease.ts';
import { microTime } from '../../kube/time.ts';
import { withWatermark, type Watermark } from './handover.ts';

/** What a candidate last saw of the lease, and when (its own clock). */
export interface Observation {
  readonly record: string;
  readonly at: number;
}

export type LeaseDecision =
  | { readonly action: 'create' }
  | { readonly action: 'renew' }
  | { readonly action: 'acquire' }
  | { readonly action: 'wait'; readonly holder: string; readonly observation: Observation };

function recordOf(spec: LeaseSpec | undefined): string {
  return JSON.stringify([spec?.holderIdentity ?? '', spec?.renewTime ?? '', spec?.leaseTransitions ?? 0, spec?.leaseDurationSeconds ?? 0]);
}

/** The decision of one election round. Pure. */
export function leaseDecision(input: {
  readonly lease: Lease | undefined;
  readonly identity: string;
  readonly now: number;
  readonly observation: Observation | undefined;
  readonly defaultLeaseDurationMs: number;
}): LeaseDecision {
  const { lease, identity, now, observation } = input;
  if (!lease) return { action: 'create' };
  const holder = lease.spec?.holderIdentity ?? '';
  if (holder === identity) return { action: 'renew' };
  if (holder === '') return { action: 'acquire' };
  const record = recordOf(lease.spec);
  if (!observation || observation.record !== record) {
    return { action: 'wait', holder, observation: { record, at: now } };
  }
  const durationMs = (lease.spec?.leaseDurationSeconds ?? input.defaultLeaseDurationMs / 1000) * 1000;
  if (now - observation.at >= durationMs) return { action: 'acquire' };
  return { action: 'wait', holder, observation };
}

/** Whether a leader that last renewed at `lastRenew` must step down at `now`. Pure. */
export function mustStepDown(lastRenew: number, now: number, renewDeadlineMs: number): boolean {
  return now - lastRenew >= renewDeadlineMs;
}

/** The longest the release on stop() may take. */
const RELEASE_TIMEOUT_MS = 5_000;

export interface LeaderElectorOptions {
  readonly api: KubeApi;
  readonly namespace: string;
  readonly name: string;
  readonly identity: string;
  readonly leaseDurationSeconds: number;
  readonly renewDeadlineSeconds: number;
  readonly retryPeriodSeconds: number;
  readonly log: Logger;
  /** This replica leads; `previous` is the Lease as it was before (undefined when it created it). */
  readonly onStartedLeading: (previous: Lease | undefined) => void;
  readonly onStoppedLeading: () => void;
  /** A round of a replica that does not lead read the Lease (another holds it). */
  readonly onLeaseRead?: (lease: Lease) => void;
  /** What this replica publishes with each write of the Lease while it leads (undefined: nothing). */
  readonly watermark?: () => Watermark | undefined;
  readonly now?: () => number;
}

export class LeaderElector {
  readonly #o: LeaderElectorOptions;
  readonly #now: () => number;
  readonly #stop = new AbortController();
  readonly #leases: LeaseClient;
  /** The Lease's path, for logs. */
  readonly #leasePath: string;
  /** Deadline of each request: half the renew deadline (client-go's resourcelock uses the same). */
  readonly #requestTimeoutMs: number;
  #leading = false;
  #lastRenew = 0;
  #observation: Observation | undefined;
  /** The lease as our last successful write returned it (the release is guarded by its resourceVersion). */
  #written: Lease | undefined;
  /** Steps a leader down at its renew deadline, whatever its rounds are doing. */
  #deadlineTimer: NodeJS.Timeout | undefined;
  #loop: Promise<void> | undefined;
  #holder = '';
  #firstRound!: () => void;
  /** Resolves after the first election round finished (leader or not). */
  readonly decided: Promise<void>;

  constructor(options: LeaderElectorOptions) {
    this.#o = options;
    this.#now = options.now ?? Date.now;
    this.#leases = leaseClient(options.api);
    this.#leasePath = leasePath(options.namespace, options.name);
    this.#requestTimeoutMs = Math.max(1, Math.round((options.renewDeadlineSeconds * 1000) / 2));
    this.decided = new Promise((resolve) => (this.#firstRound = resolve));
  }

  get leading(): boolean {
    return this.#leading;
  }

  /** The identity of the current holder as last seen ('' when unknown). */
  get holder(): string {
    return this.#leading ? this.#o.identity : this.#holder;
  }

  start(): void {
    this.#loop ??= this.#run();
  }

  /**
   * Stops competing: aborts any request in flight at once; a leader then steps down and
   * releases the lease (one request, bounded by the request timeout) so a successor can
   * start at once.
   */
  async stop(options: { release?: boolean } = {}): Promise<void> {
    this.#stop.abort();
    await this.#loop;
    this.#firstRound();
    if (this.#leading) {
      this.#setLeading(false);
      if (options.release !== false) await this.#release();
    }
  }

  async #run(): Promise<void> {
    const retryMs = this.#o.retryPeriodSeconds * 1000;
    while (!this.#stop.signal.aborted) {
      await this.#round();
      this.#firstRound();
      // Candidates jitter their retries (client-go JitterUntil factor 1.2); leaders renew on time.
      const wait = this.#leading ? retryMs : retryMs * (1 + Math.random() * 0.2);
      await pause(wait, this.#stop.signal);
    }
  }

  async #round(): Promise<void> {
    const now = this.#now();
    const renewDeadlineMs = this.#o.renewDeadlineSeconds * 1000;
    // A leader's round ends at its renew deadline (it must have stepped down by then); a
    // candidate's after one renew deadline.
    const roundMs = this.#leading ? Math.max(0, this.#lastRenew + renewDeadlineMs - now) : renewDeadlineMs;
    const deadline = AbortSignal.timeout(Math.max(1, roundMs));
    const signal = AbortSignal.any([this.#stop.signal, deadline]);
    const request = { timeoutMs: this.#requestTimeoutMs, signal };
    try {
      const lease = await this.#leases.get(this.#o.namespace, this.#o.name, request);
      if (signal.aborted) throw deadline.reason;
      const decision = leaseDecision({
        lease,
        identity: this.#o.identity,
        now,
        observation: this.#observation,
        defaultLeaseDurationMs: this.#o.leaseDurationSeconds * 1000,
      });
      let written: Lease;
      switch (decision.action) {
        case 'wait':
          this.#observation = decision.observation;
          if (lease) this.#o.onLeaseRead?.(lease);
          if (this.#holder !== decision.holder) this.#o.log.info('another replica leads; standing by', { leader: decision.holder });
          this.#holder = decision.holder;
          if (this.#leading) {
            this.#o.log.warn('the lease is held by another replica; stepping down', { leader: decision.holder });
            this.#setLeading(false);
          }
          return;
        case 'create':
          written = await this.#leases.create(this.#leaseBody(undefined, now, 0, true), request);
          break;
        case 'acquire':
          written = await this.#leases.update(this.#leaseBody(lease, now, (lease?.spec?.leaseTransitions ?? 0) + 1, true), request);
          break;
        case 'renew':
          written = await this.#leases.update(this.#leaseBody(lease, now, lease?.spec?.leaseTransitions ?? 0, !this.#leading), request);
          break;
      }
      if (signal.aborted) throw deadline.reason;
      this.#written = written;
      this.#lastRenew = now;
      this.#observation = undefined;
      if (!this.#leading) this.#setLeading(true, lease);
      this.#armDeadline(now + renewDeadlineMs - this.#now());
    } catch (err) {
      if (this.#stop.signal.aborted) return;
      const status = err instanceof KubeApiError ? err.status : undefined;
      if (status === 409) this.#o.log.debug('the lease changed under this round (409 Conflict); the next round reads it again', { lease: this.#leasePath });
      else if (status === 422)
        this.#o.log.warn('the API server refused the lease as invalid (422); check leaderElection.identity and leaseName', {
          error: errorMessage(err),
          lease: this.#leasePath,
        });
      else if (deadline.aborted)
        this.#o.log.warn('leader election round cut at its deadline (the API server did not answer in time)', {
          roundMs,
          requestTimeoutMs: this.#requestTimeoutMs,
        });
      else this.#o.log.warn('leader election round failed', { error: errorMessage(err) });
      if (this.#leading && (deadline.aborted || mustStepDown(this.#lastRenew, this.#now(), renewDeadlineMs))) {
        this.#o.log.warn('could not renew the lease within the renew deadline; stepping down', { renewDeadlineSeconds: this.#o.renewDeadlineSeconds });
        this.#setLeading(false);
      }
    }
  }

  #leaseBody(existing: Lease | undefined, now: number, transitions: number, acquiring: boolean): Lease {
    const spec: LeaseSpec = {
      holderIdentity: this.#o.identity,
      leaseDurationSeconds: Math.ceil(this.#o.leaseDurationSeconds),
      acquireTime: acquiring ? microTime(now) : (existing?.spec?.acquireTime ?? microTime(now)),
      renewTime: microTime(now),
      leaseTransitions: transitions,
    };
    return {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: withWatermark(
        {
          ...(existing?.metadata ?? {}),
          name: this.#o.name,
          namespace: this.#o.namespace,
          ...(existing?.metadata.resourceVersion ? { resourceVersion: existing.metadata.resourceVersion } : {}),
        },
        this.#o.watermark?.(),
      ),
      spec,
    };
  }

  async #release(): Promise<void> {
    // Bounded like a round's request, and at most 5 s: shutdown has a grace period to keep.
    const request = { timeoutMs: Math.min(this.#requestTimeoutMs, RELEASE_TIMEOUT_MS) };
    // The lease as last written; stop() may have cut a renewal the API server still applied, so a
    // 409 is answered by one fresh read: while we still hold it no replica has taken it over.
    let lease = this.#written;
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        lease ??= await this.#leases.get(this.#o.namespace, this.#o.name, request);
        if (lease?.spec?.holderIdentity !== this.#o.identity) return;
        const now = this.#now();
        // client-go's release: no holder, duration 1 s, guarded by the resourceVersion we last saw.
        await this.#leases.update(
          {
            ...lease,
            metadata: withWatermark(lease.metadata, this.#o.watermark?.()),
            spec: { leaseDurationSeconds: 1, renewTime: microTime(now), acquireTime: microTime(now), leaseTransitions: lease.spec?.leaseTransitions ?? 0 },
          },
          request,
        );
        this.#o.log.info('released the leader lease');
        return;
      } catch (err) {
        const changed = err instanceof KubeApiError && err.status === 409;
        if (changed && attempt === 0) {
          lease = undefined;
          continue;
        }
        this.#o.log.warn(
          changed
            ? 'did not release the leader lease: it changed since our last read (another replica may hold it)'
            : 'could not release the leader lease; a successor takes over when it expires',
          { error: errorMessage(err) },
        );
        return;
      }
    }
  }

  #armDeadline(ms: number): void {
    clearTimeout(this.#deadlineTimer);
    this.#deadlineTimer = setTimeout(
      () => {
        if (!this.#leading || this.#stop.signal.aborted) return;
        this.#o.log.warn('could not renew the lease within the renew deadline; stepping down', { renewDeadlineSeconds: this.#o.renewDeadlineSeconds });
        this.#setLeading(false);
      },
      Math.max(0, ms),
    );
    this.#deadlineTimer.unref();
  }

  #setLeading(leading: boolean, previous?: Lease): void {
    if (!leading) clearTimeout(this.#deadlineTimer);
    this.#leading = leading;
    if (leading) {
      this.#holder = this.#o.identity;
      this.#o.log.info('became the leader', { identity: this.#o.identity, lease: `${this.#o.namespace}/${this.#o.name}` });
      this.#o.onStartedLeading(previous);
    } else {
      this.#o.log.info('stopped leading', { identity: this.#o.identity });
      this.#o.onStoppedLeading();
    }
  }
}
