/**
 * The coalescer: a per-key throttle with a leading and a trailing edge.
 *
 * The first change of a key is forwarded at once (no added latency for an isolated change)
 * and opens a quiet window for that key. Further changes inside the window merge into one
 * trailing message, forwarded when the window ends — which opens a new window, so a steady
 * stream of changes leaves as at most one message per window. A burst (an apply followed by
 * the controllers' own writes) therefore costs at most two messages, and the last one names
 * the newest state; since reconciles read live state, the trailing message is what
 * guarantees the final state of a burst is reconciled.
 *
 * A change of the object itself (`Added`, `Modified`, `Deleted`: someone asked for something)
 * does not wait behind a window its children's changes opened: the first one in a window
 * leaves at once, carrying whatever was held for the key (the window keeps its end); further
 * ones in the same window merge into the trailing message as usual. So a key sends at most two
 * messages per window, and a spec change is never delayed by the status churn of its
 * Deployment (why: docs/architecture.md, "What someone asked for goes first").
 *
 * Guarantees: pure state machine with an explicit clock (`now` arguments); nothing is ever
 * dropped — every change is either returned by `offer` for sending now, or held in a
 * trailing message that `takeDue`/`takeAll` return exactly once; keys are independent.
 * Memory tracks the keys changing now: `forgetEnded` (which the forwarder calls
 * periodically) drops every ended window with nothing held, so a resync of every watched
 * object does not leave a window per object behind; `offer` is O(1), and reports when a held message
 * becomes due so the caller can keep one timer without scanning every window.
 *
 * The window length may change over time (a function instead of a number): the forwarder
 * widens it while the queue is backlogged (backlog.ts). A window keeps the length it was
 * opened with unless `shortenTo` cuts it: when the backlog clears, held messages need not wait
 * for a wait that no longer exists.
 */
import { objectKey, reasonPriority, type ReconcileMessage } from '../../contract/message.ts';
import { mergeMessages } from './merge.ts';

interface Window {
  readonly openedAt: number;
  /** Changes until this time are held back (merged into `trailing`). */
  quietUntil: number;
  trailing: ReconcileMessage | undefined;
  /** A change of the object itself was sent since this window opened (see `offer`). */
  objectChangeSent: boolean;
}

/** A change of the object itself (what someone asked for), as opposed to its children's. */
function isObjectChange(message: ReconcileMessage): boolean {
  return reasonPriority(message.reason) === 0;
}

export interface Offer {
  /** Set when the message must be sent now (the leading edge). */
  readonly send: ReconcileMessage | undefined;
  /** True when the message merged into an already held trailing message. */
  readonly coalesced: boolean;
  /** Set when the message is held: when its window ends (it is then returned by `takeDue`). */
  readonly heldUntil?: number;
}

export class Coalescer {
  readonly #windowMs: () => number;
  readonly #windows = new Map<string, Window>();
  #held = 0;
  #sweepAt = 1024;

  constructor(windowMs: number | (() => number)) {
    this.#windowMs = typeof windowMs === 'number' ? () => windowMs : windowMs;
  }

  /** Messages held back (trailing edges not yet due). */
  get size(): number {
    return this.#held;
  }

  offer(message: ReconcileMessage, now: number): Offer {
    const key = objectKey(message);
    const window = this.#windows.get(key);
    const objectChange = isObjectChange(message);
    if (!window || (window.quietUntil <= now && window.trailing === undefined)) {
      this.#windows.set(key, { openedAt: now, quietUntil: now + this.#windowMs(), trailing: undefined, objectChangeSent: objectChange });
      this.#sweep(now);
      return { send: message, coalesced: false };
    }
    if (objectChange && !window.objectChangeSent) {
      // The object's own change does not wait behind its children's: it leaves now and carries
      // whatever was held (the reconcile reads live state); the window keeps its end.
      const send = window.trailing === undefined ? message : mergeMessages(window.trailing, message);
      if (window.trailing !== undefined) this.#held--;
      window.trailing = undefined;
      window.objectChangeSent = true;
      return { send, coalesced: send !== message };
    }
    if (window.trailing === undefined) {
      window.trailing = message;
      this.#held++;
      return { send: undefined, coalesced: false, heldUntil: window.quietUntil };
    }
    window.trailing = mergeMessages(window.trailing, message);
    return { send: undefined, coalesced: true, heldUntil: window.quietUntil };
  }

  /** Removes and returns the trailing messages whose window has ended, in first-held order. */
  takeDue(now: number): ReconcileMessage[] {
    const due: ReconcileMessage[] = [];
    const windowMs = this.#windowMs();
    for (const [key, window] of this.#windows) {
      if (window.quietUntil > now) continue;
      if (window.trailing === undefined) {
        this.#windows.delete(key);
        continue;
      }
      due.push(window.trailing);
      this.#held--;
      // The trailing message opens the next window: a steady stream stays at one per window.
      this.#windows.set(key, { openedAt: now, quietUntil: now + windowMs, trailing: undefined, objectChangeSent: isObjectChange(window.trailing) });
    }
    return due;
  }

  /**
   * Cuts every open window longer than `windowMs` to that length from its opening (not before
   * `now`). Returns the new earliest due time of a held message, or undefined when none moved.
   */
  shortenTo(windowMs: number, now: number): number | undefined {
    let earliest: number | undefined;
    for (const window of this.#windows.values()) {
      const until = Math.max(now, window.openedAt + windowMs);
      if (until >= window.quietUntil) continue;
      window.quietUntil = until;
      if (window.trailing !== undefined && (earliest === undefined || until < earliest)) earliest = until;
    }
    return earliest;
  }

  /** When the next held message becomes due (undefined when none is held). */
  nextDueAt(): number | undefined {
    let next: number | undefined;
    for (const window of this.#windows.values()) {
      if (window.trailing !== undefined && (next === undefined || window.quietUntil < next)) next = window.quietUntil;
    }
    return next;
  }

  /** Every held message (shutdown, leadership loss); windows are forgotten. */
  takeAll(): ReconcileMessage[] {
    const all = [...this.#windows.values()].flatMap((w) => (w.trailing ? [w.trailing] : []));
    this.#windows.clear();
    this.#held = 0;
    return all;
  }

  /** Open windows (held or not); what `forgetEnded` bounds. */
  get windows(): number {
    return this.#windows.size;
  }

  /** Forgets every ended window with nothing held (their keys lead again, as if never seen). */
  forgetEnded(now: number): void {
    for (const [key, window] of this.#windows) {
      if (window.trailing === undefined && window.quietUntil <= now) this.#windows.delete(key);
    }
    this.#sweepAt = Math.max(1024, this.#windows.size * 2);
  }

  /** Between the caller's periodic `forgetEnded` calls: a burst of new keys cannot grow the map unbounded. */
  #sweep(now: number): void {
    if (this.#windows.size >= this.#sweepAt) this.forgetEnded(now);
  }
}
