/**
 * Leader election on a `coordination.k8s.io/v1` Lease, with client-go's rules and
 * controller-runtime's default timings (lease 15 s, renew deadline 10 s, retry 2 s):
 * - the leader renews every retry period; if it cannot renew for `renewDeadline` it steps
 *   down (stops sending) before anyone else may take over (renewDeadline < leaseDuration);
 * - a candidate takes over only after it has seen the SAME lease record unchanged for a
 *   full lease duration on its OWN clock (no trust in other nodes' clocks);
 * - every write is guarded by the lease's resourceVersion, so two candidates can never
 *   both win one round;
 * - on graceful stop the leader releases the lease (empty holder) so a successor starts
 *   at once instead of waiting for expiry.
 *
 * The decision is a pure function (`leaseDecision`), unit-tested; `LeaderElector` is the
 * thin I/O loop around it.
 */
import { errorMessage, type Logger } from '../observability/log.ts';
import { sleep } from './backoff.ts';
import { KubeApiError, type KubeApi } from './kube-api.ts';

export interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}

export interface Lease {
  apiVersion: 'coordination.k8s.io/v1';
  kind: 'Lease';
  metadata: { name: string; namespace: string; resourceVersion?: string; [k: string]: unknown };
  spec?: LeaseSpec;
}

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

/** Kubernetes MicroTime: RFC 3339 with exactly six fractional digits. */
export function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

export interface LeaderElectorOptions {
  readonly api: KubeApi;
  readonly namespace: string;
  readonly name: string;
  readonly identity: string;
  readonly leaseDurationSeconds: number;
  readonly renewDeadlineSeconds: number;
  readonly retryPeriodSeconds: number;
  readonly log: Logger;
  readonly onStartedLeading: () => void;
  readonly onStoppedLeading: () => void;
  readonly now?: () => number;
}

export class LeaderElector {
  readonly #o: LeaderElectorOptions;
  readonly #now: () => number;
  readonly #stop = new AbortController();
  readonly #path: string;
  #leading = false;
  #lastRenew = 0;
  #observation: Observation | undefined;
  #loop: Promise<void> | undefined;
  #holder = '';
  #firstRound!: () => void;
  /** Resolves after the first election round finished (leader or not). */
  readonly decided: Promise<void>;

  constructor(options: LeaderElectorOptions) {
    this.#o = options;
    this.#now = options.now ?? Date.now;
    this.#path = `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(options.namespace)}/leases`;
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

  /** Stops competing; a leader releases the lease so a successor can start at once. */
  async stop(options: { release?: boolean } = {}): Promise<void> {
    this.#stop.abort();
    await this.#loop;
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
      await sleep(wait, this.#stop.signal);
    }
  }

  async #round(): Promise<void> {
    const now = this.#now();
    try {
      let lease: Lease | undefined;
      try {
        lease = await this.#o.api.requestJson<Lease>('GET', `${this.#path}/${encodeURIComponent(this.#o.name)}`, { timeoutMs: this.#o.renewDeadlineSeconds * 1000, signal: this.#stop.signal });
      } catch (err) {
        if (!(err instanceof KubeApiError && err.status === 404)) throw err;
      }
      if (this.#stop.signal.aborted) return;
      const decision = leaseDecision({ lease, identity: this.#o.identity, now, observation: this.#observation, defaultLeaseDurationMs: this.#o.leaseDurationSeconds * 1000 });
      switch (decision.action) {
        case 'wait':
          this.#observation = decision.observation;
          if (this.#holder !== decision.holder) this.#o.log.info('another replica leads; standing by', { leader: decision.holder });
          this.#holder = decision.holder;
          if (this.#leading) {
            this.#o.log.warn('the lease is held by another replica; stepping down', { leader: decision.holder });
            this.#setLeading(false);
          }
          return;
        case 'create':
          await this.#o.api.requestJson('POST', this.#path, { body: this.#leaseBody(undefined, now, 0, true), timeoutMs: this.#o.renewDeadlineSeconds * 1000 });
          break;
        case 'acquire':
          await this.#o.api.requestJson('PUT', `${this.#path}/${encodeURIComponent(this.#o.name)}`, {
            body: this.#leaseBody(lease, now, (lease?.spec?.leaseTransitions ?? 0) + 1, true),
            timeoutMs: this.#o.renewDeadlineSeconds * 1000,
          });
          break;
        case 'renew':
          await this.#o.api.requestJson('PUT', `${this.#path}/${encodeURIComponent(this.#o.name)}`, {
            body: this.#leaseBody(lease, now, lease?.spec?.leaseTransitions ?? 0, !this.#leading),
            timeoutMs: this.#o.renewDeadlineSeconds * 1000,
          });
          break;
      }
      this.#lastRenew = now;
      this.#observation = undefined;
      if (!this.#leading) this.#setLeading(true);
    } catch (err) {
      if (this.#stop.signal.aborted) return;
      const conflict = err instanceof KubeApiError && (err.status === 409 || err.status === 422);
      if (!conflict) this.#o.log.warn('leader election round failed', { error: errorMessage(err) });
      if (this.#leading && mustStepDown(this.#lastRenew, this.#now(), this.#o.renewDeadlineSeconds * 1000)) {
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
      metadata: {
        ...(existing?.metadata ?? {}),
        name: this.#o.name,
        namespace: this.#o.namespace,
        ...(existing?.metadata.resourceVersion ? { resourceVersion: existing.metadata.resourceVersion } : {}),
      },
      spec,
    };
  }

  async #release(): Promise<void> {
    try {
      const lease = await this.#o.api.requestJson<Lease>('GET', `${this.#path}/${encodeURIComponent(this.#o.name)}`, { timeoutMs: 5000 });
      if (lease.spec?.holderIdentity !== this.#o.identity) return;
      const now = this.#now();
      await this.#o.api.requestJson('PUT', `${this.#path}/${encodeURIComponent(this.#o.name)}`, {
        body: { ...lease, spec: { leaseDurationSeconds: 1, renewTime: microTime(now), acquireTime: microTime(now), leaseTransitions: lease.spec?.leaseTransitions ?? 0 } },
        timeoutMs: 5000,
      });
      this.#o.log.info('released the leader lease');
    } catch (err) {
      this.#o.log.warn('could not release the leader lease; a successor takes over when it expires', { error: errorMessage(err) });
    }
  }

  #setLeading(leading: boolean): void {
    this.#leading = leading;
    if (leading) {
      this.#holder = this.#o.identity;
      this.#o.log.info('became the leader', { identity: this.#o.identity, lease: `${this.#o.namespace}/${this.#o.name}` });
      this.#o.onStartedLeading();
    } else {
      this.#o.log.info('stopped leading', { identity: this.#o.identity });
      this.#o.onStoppedLeading();
    }
  }
}
