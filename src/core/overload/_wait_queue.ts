// The admission queue in front of the concurrency limit (DESIGN.md "Overload control"):
// bounded in length and in delay. Waiting costs nothing; what must not grow is how long a
// request waits. Served oldest first while the queue is fresh (it drained within
// `lifoAfterMs`), newest first once it is standing (adaptive LIFO, as in "Fail at Scale"): under
// overload what is admitted is fresh, and the waiters left behind are the ones dropped. The
// owner may call it standing sooner (`stand`: too many waiters to drain within the interval).
// A waiter is refused once its time in the queue (its sojourn, CoDel's measure) passes
// `maxWaitMs`; one timer, for the oldest waiter, does that (lazily: a permit may still reach a
// waiter whose wait is just up). While the queue stands, a free permit does not go to a waiter
// that has waited longer than `standingWaitMs` (CoDel's short target once the queue has not
// drained within an interval): `take` gives none, and the permit stays free for the next
// request. That waiter is not refused there either: it stays, with the older ones under it,
// until its wait bound refuses it, or the owner does (`dropStale`: requests stopped finding
// the limit full, so nobody fresher will take the permit). Refused at the short target
// instead, one a free permit, each refusal came straight back under a closed loop: an
// I/O-bound storm on Node answered ~600 503s a second at a 20 ms target, ~150 with the waiters
// kept. A wait counts only from when permits last started coming back after a gap longer than
// the bound (the owner says when): waiting behind long work is not queueing. A waiter whose
// client leaves is removed at once.
// Internal: the concurrency limit owns one.
import type { Clock, TimerHandle } from "../clock.ts";

/** One waiting request. */
export interface _Waiter {
  /** When it joined the queue. */
  readonly at: number;
  /**
   * Called once: with the time the permit was handed over, or with the reason it was refused.
   * `over`: the permit is handed over past the limit (the owner's call, not the queue's).
   */
  settle(outcome: number | "queue-timeout" | "aborted", over?: boolean): void;
  live: boolean;
  /** Stops listening for its client leaving, and lets go of what it listened on (a waiter that listens). */
  detach?(): void;
}

export class _WaitQueue {
  readonly #clock: Clock;
  readonly #maxWaitMs: number;
  readonly #lifoAfterMs: number;
  readonly #standingWaitMs: number;
  // A deque over an array: live waiters between #head and the end, oldest first; a waiter that
  // left is a tombstone (live = false) until it reaches an end. Slots below #head are cleared
  // as the head passes them: a waiter served or refused from the head must not stay reachable
  // (with what it holds of its request) until the array is next compacted.
  #items: (_Waiter | undefined)[] = [];
  #head = 0;
  #count = 0;
  /** When the queue last drained (it is "standing" once it has not for lifoAfterMs). */
  #emptyAt = 0;
  #timer: TimerHandle | undefined = undefined;
  #timed: boolean;
  readonly #onDue: (now: number) => void;
  #onEmpty: (() => void)[] = [];

  /**
   * `onDue` runs when the oldest waiter's wait is up, before it is refused (the owner may still
   * admit it). `standingWaitMs` bounds the wait of a waiter admitted while the queue stands
   * (Infinity: no bound but `maxWaitMs`; then `take` returns a waiter whenever one waits).
   * `timed`: see {@linkcode timed}.
   */
  constructor(clock: Clock, maxWaitMs: number, lifoAfterMs: number, onDue: (now: number) => void = () => {}, standingWaitMs = Infinity, timed = true) {
    this.#clock = clock;
    this.#timed = timed;
    this.#maxWaitMs = maxWaitMs;
    this.#lifoAfterMs = lifoAfterMs;
    this.#onDue = onDue;
    this.#standingWaitMs = standingWaitMs;
  }

  get length(): number {
    return this.#count;
  }

  /** When the newest waiter joined; undefined when none waits. */
  get newestAt(): number | undefined {
    // The array's last slot holds a live waiter whenever one waits (#trim keeps it so).
    return this.#count === 0 ? undefined : this.#items[this.#items.length - 1]!.at;
  }

  /** Whether the queue has not been empty for `lifoAfterMs` (then it serves newest first). */
  standing(now: number): boolean {
    return this.#count > 0 && now - this.#emptyAt >= this.#lifoAfterMs;
  }

  /**
   * The owner judged that the waiters cannot drain in time (too many for the permits at the
   * work's no-queue latency): the queue stands from `now` on, without waiting
   * `lifoAfterMs` to see it not drain, until it next empties.
   */
  stand(now: number): void {
    if (this.#count > 0 && now - this.#emptyAt < this.#lifoAfterMs) this.#emptyAt = now - this.#lifoAfterMs;
  }

  /** Settles the next time no waiter is left (at once if none is). */
  emptied(): Promise<void> {
    return this.#count === 0 ? Promise.resolve() : new Promise((resolve) => this.#onEmpty.push(resolve));
  }

  push(w: _Waiter): void {
    if (this.#count === 0) this.#emptyAt = w.at;
    this.#items.push(w);
    this.#count++;
    if (this.#timed && this.#timer === undefined) this.#arm(w.at);
  }

  /**
   * Whether the queue keeps its one timer, for the oldest waiter's wait bound. Off, it arms
   * none and the owner calls {@linkcode expire} (the turn queue does at every slice, and turns
   * the timer on only while its slices are held).
   */
  get timed(): boolean {
    return this.#timed;
  }

  set timed(on: boolean) {
    if (on === this.#timed) return;
    this.#timed = on;
    if (!on) {
      this.#timer?.cancel();
      this.#timer = undefined;
      return;
    }
    const oldest = this.#oldest();
    if (oldest !== undefined) this.#arm(oldest.at);
  }

  /**
   * The waiter that gets a free permit: the oldest while fresh, the newest while standing.
   * (One whose wait is just up is served rather than refused: the bound is on refusals.)
   * Undefined when none waits, or when the queue stands and even its newest waiter has waited
   * past `standingWaitMs` counted from `since`: then every waiter stays, and the permit stays
   * free for the next request. The owner passes as `since` when permits last started coming
   * back after a gap longer than the bound: a wait before that was for long work, not in a
   * queue (Infinity: take the waiter whatever its wait).
   * `oldest`: the oldest waiter, standing or not (the owner admits the ones whose wait is up).
   */
  take(now: number, since: number, oldest = false): _Waiter | undefined {
    if (this.#count === 0) return undefined;
    const lifo = !oldest && this.standing(now);
    let w: _Waiter | undefined;
    if (lifo) {
      // The array's last slot holds a live waiter whenever one waits (#trim keeps it so).
      if (this.#stale(this.#items[this.#items.length - 1]!, now, since)) return undefined;
      w = this.#items.pop();
    } else {
      const items = this.#items;
      do {
        w = items[this.#head];
        items[this.#head++] = undefined;
      } while (w !== undefined && !w.live);
    }
    this.#gone(w!, now);
    this.#trim();
    return w;
  }

  /** Takes every waiter out, each settled with `outcome` (its owner closing, a forced drain). */
  settleAll(now: number, outcome: number | "queue-timeout"): void {
    for (let w = this.take(now, Infinity); w !== undefined; w = this.take(now, Infinity)) w.settle(outcome);
  }

  /** A waiter leaves early (its client went away): out of the count now, out of the array lazily. */
  remove(w: _Waiter): void {
    if (!w.live) return;
    this.#gone(w, this.#clock.now());
    this.#trim();
  }

  /** The oldest waiter, taken, if it has waited `maxWaitMs` or longer by `now`; else undefined. */
  takeDue(now: number): _Waiter | undefined {
    const w = this.#oldest();
    return w === undefined || now - w.at < this.#maxWaitMs ? undefined : this.take(now, Infinity, true);
  }

  /**
   * Refuses the waiters past `standingWaitMs` (counted from `since`, as in `take`), newest
   * first: the owner's call, once the waiters `take` held have no fresher request to make room for.
   */
  dropStale(now: number, since: number): void {
    while (this.#count > 0) {
      const w = this.#items[this.#items.length - 1]!;
      if (!this.#stale(w, now, since)) break;
      this.#items.pop();
      this.#gone(w, now);
      this.#trim();
      w.settle("queue-timeout");
    }
  }

  // Past the standing bound, its wait counted from `since` (see take).
  #stale(w: _Waiter, now: number, since: number): boolean {
    return now - Math.max(w.at, since) > this.#standingWaitMs;
  }

  /** Refuses every waiter whose sojourn reached maxWaitMs (the oldest are at the head). */
  expire(now: number): void {
    for (;;) {
      const w = this.#items[this.#head];
      if (w === undefined) break;
      if (w.live && now - w.at < this.#maxWaitMs) break;
      this.#items[this.#head++] = undefined;
      if (!w.live) continue;
      this.#gone(w, now);
      w.settle("queue-timeout");
    }
    this.#trim();
  }

  #gone(w: _Waiter, now: number): void {
    w.live = false;
    // Its abort listener's hold on the request (a tombstone may wait a while to reach an end).
    w.detach?.();
    this.#count--;
    if (this.#count === 0) {
      this.#emptyAt = now;
      this.#timer?.cancel();
      this.#timer = undefined;
      if (this.#onEmpty.length > 0) {
        const resolved = this.#onEmpty;
        this.#onEmpty = [];
        for (const resolve of resolved) resolve();
      }
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
      if (oldest !== undefined && this.#timed) this.#arm(oldest.at);
    }, due);
  }

  #oldest(): _Waiter | undefined {
    for (let i = this.#head; i < this.#items.length; i++) if (this.#items[i]!.live) return this.#items[i];
    return undefined;
  }
}
