// Deadlines that all share one delay (a rate store's timeout): they fall due in the order
// they were set, so one timer, armed for the oldest live one, serves them all — no timer per
// call (a timer per call cost 5–25 µs a call with thousands outstanding). Not re-exported.
import type { Clock, TimerHandle } from "../clock.ts";

/** One deadline; `cancel` when the work ends first. */
export interface _Deadline {
  cancel(): void;
}

class _Entry implements _Deadline {
  constructor(readonly due: number, public fn: (() => void) | undefined) {}
  // Cancelled entries wait in the queue until their due time: without their callback (and
  // what it holds: the call's promise and answer) they are a few bytes each.
  cancel(): void {
    this.fn = undefined;
  }
}

export class _FifoDeadlines {
  readonly #clock: Clock;
  readonly #delayMs: number;
  #queue: _Entry[] = [];
  #head = 0;
  #timer: TimerHandle | undefined;

  constructor(clock: Clock, delayMs: number) {
    this.#clock = clock;
    this.#delayMs = delayMs;
  }

  /** Runs `fn` `delayMs` from now, never later than one timer's own lateness. */
  add(fn: () => void): _Deadline {
    const entry = new _Entry(this.#clock.now() + this.#delayMs, fn);
    this.#queue.push(entry);
    if (this.#timer === undefined) this.#arm(this.#delayMs);
    return entry;
  }

  #arm(ms: number): void {
    // Unref'd: a pending deadline alone never keeps a process alive (the call's socket does).
    this.#timer = this.#clock.setTimeout(() => this.#fire(), ms, { unref: true });
  }

  #fire(): void {
    this.#timer = undefined;
    const now = this.#clock.now();
    const q = this.#queue;
    while (this.#head < q.length) {
      const e = q[this.#head]!;
      const fn = e.fn;
      if (fn !== undefined && e.due > now) break;
      this.#head++;
      if (fn !== undefined) {
        e.fn = undefined;
        fn();
      }
    }
    // Drop the consumed prefix once it is most of the array (amortised O(1) a deadline).
    if (this.#head > 64 && this.#head * 2 > q.length) {
      this.#queue = q.slice(this.#head);
      this.#head = 0;
    }
    // Skip ended ones at the head, then wait for the oldest live deadline.
    while (this.#head < this.#queue.length && this.#queue[this.#head]!.fn === undefined) this.#head++;
    if (this.#head < this.#queue.length) this.#arm(Math.max(1, this.#queue[this.#head]!.due - now));
    else {
      this.#queue = [];
      this.#head = 0;
    }
  }
}
