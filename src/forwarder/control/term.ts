/**
 * Leadership terms: whether this replica leads now, whether it is stopping, and a promise that
 * settles when the current term ends (leadership lost, or `stop()` began) — what `ready` waits
 * against, so that a watch that never syncs (403, 404, a CRD removed) cannot hold `ready`, and
 * with it `stop()`, forever.
 *
 * Guarantees: `untilSynced` resolves once the replica leads and `synced()` resolved within one
 * term — or it no longer leads, or it is stopping; it never rejects. Each `end()` settles the
 * term's promise once and opens the next.
 */

export class LeadershipTerm {
  #leading = false;
  #stopping = false;
  #ended = Promise.withResolvers<void>();

  get leading(): boolean {
    return this.#leading;
  }

  get stopping(): boolean {
    return this.#stopping;
  }

  /** This replica became the leader. */
  begin(): void {
    this.#leading = true;
  }

  /** The term ends: leadership lost (`leading` false) or shutdown began (`stopping`). */
  end(how: 'lost' | 'stopping'): void {
    if (how === 'lost') this.#leading = false;
    else this.#stopping = true;
    this.#ended.resolve();
    this.#ended = Promise.withResolvers<void>();
  }

  /** The process has stopped: nothing leads any more. */
  stopped(): void {
    this.#leading = false;
  }

  /** Resolves once this replica leads with `synced()` resolved in one term, or no longer leads, or is stopping. */
  async untilSynced(synced: () => Promise<void>): Promise<void> {
    while (this.#leading && !this.#stopping) {
      const ended = this.#ended.promise.then(() => false);
      if (await Promise.race([synced().then(() => true), ended])) return;
    }
  }
}
