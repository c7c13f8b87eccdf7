// Deadlines that all share one delay (a rate store's timeout): they fall due in the order
// they were set, so one timer, armed for the oldest live one, serves them all — no timer per
// call (a timer per call cost 5–25 µs a call with thousands outstanding). Calls mostly end in
// the order they were made, so the ended ones at the head are dropped as each new one is
// added: the queue holds about the calls outstanding, not every call of the last timeout
// (tens of thousands with a 1 s timeout under load; dropping them saved 0.2–0.4 µs a call on
// each runtime, against a backend that answers at once, in interleaved runs). Not re-exported.
import type { Clock, TimerHandle } from "../clock.ts";

/** How late the timer may run before the calls it ends get one more turn (a timer's own lateness is about a millisecond). */
const LATE_MS = 2;
/**
 * That turn: long enough for pending I/O to be read first on each runtime (1 ms was not on Deno
 * after a process paused: its next timer ran before the answer waiting in the socket).
 */
const GRACE_MS = 10;

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
  /** When the armed timer is due. */
  #armedFor = 0;
  /** Deadlines due by this time have had their one more turn (see `#fire`). */
  #gracedTo = -Infinity;

  constructor(clock: Clock, delayMs: number) {
    this.#clock = clock;
    this.#delayMs = delayMs;
  }

  /** Deadlines held: the live ones, and ended ones not yet dropped (behind a live one). */
  get held(): number {
    return this.#queue.length - this.#head;
  }

  /** Runs `fn` `delayMs` from now, never later than one timer's own lateness — and, when that was more than LATE_MS, one more turn. */
  add(fn: () => void): _Deadline {
    this.#dropEnded();
    const now = this.#clock.now();
    const entry = new _Entry(now + this.#delayMs, fn);
    this.#queue.push(entry);
    // For the oldest live deadline: this one, unless a callback of #fire adds it.
    if (this.#timer === undefined) this.#arm(Math.max(1, this.#queue[this.#head]!.due - now), now);
    return entry;
  }

  #arm(ms: number, now: number): void {
    // Not unref'd: whoever awaits a call gets its answer within the timeout even when nothing
    // else keeps the process alive (a script, a client without a socket); the timer lives
    // only while calls are pending, so it holds a process for one timeout at most.
    this.#armedFor = now + ms;
    this.#timer = this.#clock.setTimeout(() => this.#fire(), ms);
  }

  #fire(): void {
    this.#timer = undefined;
    const now = this.#clock.now();
    // Run late (a handler blocked the loop, a collection, the process paused): an answer that
    // came meanwhile may wait unread in its socket, and the timers run before pending I/O is
    // read. The deadlines due by now get one more turn first (GRACE_MS: after the pending
    // I/O), each once — a deadline due after that turn gets its own if a later stall passes
    // it, so none is put off twice. Judged at once, a store that answered in 10 ms beside a
    // handler blocking the loop 70-120 ms was a timeout for every call in flight — 429 with
    // the whole window as Retry-After under the default fail-closed, and after five the
    // fallback (the clocks review, all runtimes).
    const late = now - this.#armedFor > LATE_MS;
    // The queue is read afresh each turn: a callback may add a deadline, which may drop the
    // head or re-base the array (and arm the timer).
    while (this.#head < this.#queue.length) {
      const e = this.#queue[this.#head]!;
      const fn = e.fn;
      if (fn !== undefined && e.due > now) break;
      if (fn !== undefined && late && e.due > this.#gracedTo) {
        this.#gracedTo = now;
        (this.#timer as TimerHandle | undefined)?.cancel(); // one a callback above armed: the turn is this one
        this.#arm(GRACE_MS, now);
        return;
      }
      this.#head++;
      if (fn !== undefined) {
        e.fn = undefined;
        fn();
      }
    }
    // Skip ended ones at the head, then wait for the oldest live deadline.
    this.#dropEnded();
    if (this.#timer === undefined && this.#head < this.#queue.length) this.#arm(Math.max(1, this.#queue[this.#head]!.due - now), now);
  }

  /** Drops the ended deadlines at the head (the armed timer still fires for the old head, then re-arms). */
  #dropEnded(): void {
    const q = this.#queue;
    let head = this.#head;
    while (head < q.length && q[head]!.fn === undefined) head++;
    if (head === q.length) {
      q.length = 0; // kept: one call at a time reuses it
      this.#head = 0;
    } else if (head > 64 && head * 2 > q.length) {
      // Drop the consumed prefix once it is most of the array (amortised O(1) a deadline).
      this.#queue = q.slice(head);
      this.#head = 0;
    } else this.#head = head;
  }
}
