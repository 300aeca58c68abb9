/**
 * The coalescer: holds each key's message for a short window after its FIRST change, so a
 * burst of changes to one object (an apply followed by its controllers' writes) leaves as
 * one message, while a steady stream of changes is still forwarded at least once per
 * window (the window does not restart on every change — no starvation).
 *
 * Guarantees: pure state machine with an explicit clock (`now` arguments); `takeDue(now)`
 * returns each key at most once, in first-seen order; nothing is ever dropped — `takeAll`
 * drains everything (shutdown, leadership loss).
 */
import { objectKey, type ReconcileMessage } from '../contract/message.ts';
import { mergeMessages } from './merge.ts';

interface Pending {
  message: ReconcileMessage;
  readonly dueAt: number;
}

export class Coalescer {
  readonly #windowMs: number;
  readonly #pending = new Map<string, Pending>();

  constructor(windowMs: number) {
    this.#windowMs = windowMs;
  }

  get size(): number {
    return this.#pending.size;
  }

  /** Adds a message; returns true when it merged into a pending one (a coalesced change). */
  offer(message: ReconcileMessage, now: number): boolean {
    const key = objectKey(message);
    const pending = this.#pending.get(key);
    if (pending) {
      pending.message = mergeMessages(pending.message, message);
      return true;
    }
    this.#pending.set(key, { message, dueAt: now + this.#windowMs });
    return false;
  }

  /** Removes and returns the messages whose window has passed. */
  takeDue(now: number): ReconcileMessage[] {
    const due: ReconcileMessage[] = [];
    for (const [key, pending] of this.#pending) {
      if (pending.dueAt <= now) {
        due.push(pending.message);
        this.#pending.delete(key);
      }
    }
    return due;
  }

  /** When the next message becomes due (undefined when empty). */
  nextDueAt(): number | undefined {
    let next: number | undefined;
    for (const pending of this.#pending.values()) {
      if (next === undefined || pending.dueAt < next) next = pending.dueAt;
    }
    return next;
  }

  takeAll(): ReconcileMessage[] {
    const all = [...this.#pending.values()].map((p) => p.message);
    this.#pending.clear();
    return all;
  }
}
