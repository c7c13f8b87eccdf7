// The admission queue in front of the concurrency limit (DESIGN.md "Overload control"):
// bounded in length and in delay. Waiting costs nothing; what must not grow is how long a
// request waits. Served oldest first while the queue is fresh (it was empty within
// `lifoAfterMs`), newest first once it is standing (adaptive LIFO, as in "Fail at Scale"): under
// overload what is admitted is fresh, and the waiters left behind are the ones dropped.
// A waiter is refused once its time in the queue (its sojourn, CoDel's measure) passes
// `maxWaitMs`; one timer, for the oldest waiter, does that (lazily: a permit may still reach a
// waiter whose wait is just up). A waiter whose client leaves is removed at once. Internal: the
// concurrency limit owns one.
import type { Clock, TimerHandle } from "../clock.ts";

/** One waiting request. */
export interface _Waiter {
  /** When it joined the queue. */
  readonly at: number;
  /** Called once: with the time the permit was handed over, or with the reason it was refused. */
  readonly settle: (outcome: number | "queue-timeout" | "aborted") => void;
  live: boolean;
  detach: (() => void) | undefined;
}

export class _WaitQueue {
  readonly #clock: Clock;
  readonly #maxWaitMs: number;
  readonly #lifoAfterMs: number;
  // A deque over an array: live waiters between #head and the end, oldest first; a waiter that
  // left is a tombstone (live = false) until it reaches an end.
  #items: _Waiter[] = [];
  #head = 0;
  #count = 0;
  /** When the queue was last empty (it is "standing" once it has not been for lifoAfterMs). */
  #emptyAt = 0;
  #timer: TimerHandle | undefined = undefined;
  readonly #onDue: (now: number) => void;

  /** `onDue` runs when the oldest waiter's wait is up, before it is refused (the owner may still admit it). */
  constructor(clock: Clock, maxWaitMs: number, lifoAfterMs: number, onDue: (now: number) => void = () => {}) {
    this.#clock = clock;
    this.#maxWaitMs = maxWaitMs;
    this.#lifoAfterMs = lifoAfterMs;
    this.#onDue = onDue;
  }

  get length(): number {
    return this.#count;
  }

  /** Whether the queue has not been empty for `lifoAfterMs` (then it serves newest first). */
  standing(now: number): boolean {
    return this.#count > 0 && now - this.#emptyAt >= this.#lifoAfterMs;
  }

  push(w: _Waiter): void {
    if (this.#count === 0) this.#emptyAt = w.at;
    this.#items.push(w);
    this.#count++;
    if (this.#timer === undefined) this.#arm(w.at);
  }

  /**
   * The waiter that gets a free permit: the oldest while fresh, the newest while standing.
   * (One whose wait is just up is served rather than refused: the bound is on refusals.)
   */
  take(now: number): _Waiter | undefined {
    if (this.#count === 0) return undefined;
    const lifo = this.standing(now);
    let w: _Waiter | undefined;
    if (lifo) {
      do w = this.#items.pop(); while (w !== undefined && !w.live);
    } else {
      do w = this.#items[this.#head++]; while (w !== undefined && !w.live);
    }
    this.#gone(w!, now);
    this.#trim();
    return w;
  }

  /** A waiter leaves early (its client went away): out of the count now, out of the array lazily. */
  remove(w: _Waiter): void {
    if (!w.live) return;
    this.#gone(w, this.#clock.now());
    this.#trim();
  }

  /** Refuses every waiter whose sojourn reached maxWaitMs (the oldest are at the head). */
  expire(now: number): void {
    for (;;) {
      const w = this.#items[this.#head];
      if (w === undefined) break;
      if (!w.live) {
        this.#head++;
        continue;
      }
      if (now - w.at < this.#maxWaitMs) break;
      this.#head++;
      this.#gone(w, now);
      w.settle("queue-timeout");
    }
    this.#trim();
  }

  #gone(w: _Waiter, now: number): void {
    w.live = false;
    w.detach?.();
    this.#count--;
    if (this.#count === 0) {
      this.#emptyAt = now;
      this.#timer?.cancel();
      this.#timer = undefined;
    }
  }

  #trim(): void {
    if (this.#count === 0) {
      this.#items = [];
      this.#head = 0;
      return;
    }
    while (this.#items.length > this.#head && !this.#items[this.#items.length - 1]!.live) this.#items.pop();
    if (this.#head > 1024 && this.#head * 2 > this.#items.length) {
      this.#items = this.#items.slice(this.#head);
      this.#head = 0;
    }
  }

  // One timer, due when the oldest waiter's sojourn reaches maxWaitMs.
  #arm(oldestAt: number): void {
    const due = Math.max(0, oldestAt + this.#maxWaitMs - this.#clock.now());
    this.#timer = this.#clock.setTimeout(() => {
      this.#timer = undefined;
      const now = this.#clock.now();
      this.#onDue(now);
      this.expire(now);
      const oldest = this.#oldest();
      if (oldest !== undefined) this.#arm(oldest.at);
    }, due);
  }

  #oldest(): _Waiter | undefined {
    for (let i = this.#head; i < this.#items.length; i++) if (this.#items[i]!.live) return this.#items[i];
    return undefined;
  }
}
