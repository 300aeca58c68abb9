/**
 * The work queue of an in-process controller, with client-go's `workqueue` semantics
 * (what controller-runtime uses under every controller):
 *
 * - de-duplicates: a key added while it waits is queued once (`dirty` set);
 * - never runs one key concurrently: a key added while a worker processes it is held back
 *   and queued again when that worker calls `done(key)`;
 * - `addAfter(key, ms)` (controller-runtime's `RequeueAfter`): queued when the delay runs
 *   out; of several pending delays for one key only the earliest counts;
 * - `addRateLimited(key)` (an error): per-key exponential backoff (5 ms → 1000 s by
 *   default), reset by `forget(key)` after a success;
 * - FIFO among distinct keys; `get()` waits for work and resolves `undefined` after
 *   `shutDown()` (workers then exit).
 */
import { ItemExponentialBackoff } from './rate-limiter.ts';

export interface WorkQueueOptions {
  readonly baseDelayMs?: number;
  readonly maxDelayMs?: number;
}

export class WorkQueue<K extends string = string> {
  readonly #queue: K[] = [];
  #head = 0;
  readonly #dirty = new Set<K>();
  readonly #processing = new Set<K>();
  readonly #waiting = new Map<K, { at: number; timer: NodeJS.Timeout }>();
  readonly #getters: ((key: K | undefined) => void)[] = [];
  readonly #backoff: ItemExponentialBackoff;
  #shuttingDown = false;
  /** Keys handed to workers, for stats. */
  gets = 0;

  constructor(options: WorkQueueOptions = {}) {
    this.#backoff = new ItemExponentialBackoff({
      ...(options.baseDelayMs !== undefined ? { baseMs: options.baseDelayMs } : {}),
      ...(options.maxDelayMs !== undefined ? { capMs: options.maxDelayMs } : {}),
    });
  }

  /** Keys waiting to be handed out (not counting delayed or in-process keys). */
  get length(): number {
    return this.#queue.length - this.#head;
  }

  /** Keys a worker holds right now. */
  get processing(): number {
    return this.#processing.size;
  }

  /** Keys waiting for a delay (`addAfter`, `addRateLimited`). */
  get delayed(): number {
    return this.#waiting.size;
  }

  get shuttingDown(): boolean {
    return this.#shuttingDown;
  }

  add(key: K): void {
    if (this.#shuttingDown || this.#dirty.has(key)) return;
    this.#dirty.add(key);
    if (this.#processing.has(key)) return; // queued again by done()
    this.#push(key);
  }

  /** Queues `key` after `delayMs` (at once when ≤ 0); the earliest pending delay wins. */
  addAfter(key: K, delayMs: number): void {
    if (this.#shuttingDown) return;
    if (delayMs <= 0) {
      this.add(key);
      return;
    }
    const at = Date.now() + delayMs;
    const pending = this.#waiting.get(key);
    if (pending && pending.at <= at) return;
    if (pending) clearTimeout(pending.timer);
    const timer = setTimeout(() => {
      this.#waiting.delete(key);
      this.add(key);
    }, delayMs);
    this.#waiting.set(key, { at, timer });
  }

  /** A failure of `key`: queues it again after its next backoff delay. Returns the delay (ms). */
  addRateLimited(key: K): number {
    const delay = this.#backoff.when(key);
    this.addAfter(key, delay);
    return delay;
  }

  /** `key` succeeded: its backoff starts over. */
  forget(key: K): void {
    this.#backoff.forget(key);
  }

  /** Failures of `key` since its last `forget`. */
  numRequeues(key: K): number {
    return this.#backoff.failures(key);
  }

  /** The next key to process (the caller must call `done(key)`); undefined once shut down. */
  get(): Promise<K | undefined> {
    if (this.length > 0) return Promise.resolve(this.#take());
    if (this.#shuttingDown) return Promise.resolve(undefined);
    return new Promise((resolve) => this.#getters.push(resolve));
  }

  /** The worker finished `key`; if it was added meanwhile, it is queued again now. */
  done(key: K): void {
    this.#processing.delete(key);
    if (this.#dirty.has(key) && !this.#shuttingDown) this.#push(key);
  }

  /** Stops handing out keys: waiting `get()`s resolve undefined, delays are cancelled. */
  shutDown(): void {
    this.#shuttingDown = true;
    for (const { timer } of this.#waiting.values()) clearTimeout(timer);
    this.#waiting.clear();
    for (const resolve of this.#getters.splice(0)) resolve(undefined);
  }

  #push(key: K): void {
    const getter = this.#getters.shift();
    if (getter) {
      getter(this.#claim(key));
      return;
    }
    this.#queue.push(key);
  }

  #take(): K {
    const key = this.#queue[this.#head]!;
    this.#head += 1;
    if (this.#head > 1024 && this.#head * 2 > this.#queue.length) {
      this.#queue.splice(0, this.#head);
      this.#head = 0;
    }
    return this.#claim(key);
  }

  #claim(key: K): K {
    this.#dirty.delete(key);
    this.#processing.add(key);
    this.gets += 1;
    return key;
  }
}
