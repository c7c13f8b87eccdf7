// The load gate's queue of requests put off to a later event-loop turn: when a turn's batch is
// full (or the admitted share says not now), a request waits here instead of being refused.
// A refusal under a closed-loop storm comes straight back and costs CPU; a waiting request
// costs nothing. The clock's `setImmediate` starts the waiters in short slices, one slice a
// turn, newest first, so what is started is fresh and the loop keeps turning between slices:
// responses go out, requests come in (Node accepts one new connection per loop turn, so long
// turns would leave new clients waiting in the kernel's accept queue). The waiters are held by
// the admission queue's own deque (_wait_queue.ts, always newest first here): one that has
// waited `waitMs` is refused, oldest first; the length is bounded. While the load monitor
// says not now (the loop stalled right now), nothing starts, and slices wait for its next
// probe rather than spin. A slice that can empty the queue within the room the monitor gives
// (its batch bound, while it reads normal) empties it (see #slice).
import type { Clock, TimerHandle } from "../clock.ts";
import type { AbortSignalLike } from "./permit.ts";
import { type _Waiter, _WaitQueue } from "./_wait_queue.ts";

/**
 * One request put off: `go(true)` starts it, `go(false)` refuses it, `go("left")` refuses it as
 * its client's leaving. Called once.
 */
export interface _TurnWaiter {
  /** When it arrived (its wait counts from here). */
  readonly at: number;
  go(admit: boolean | "left"): void;
  /** Fires when its client leaves: it is taken out of the queue at once, `go("left")`. */
  readonly left?: AbortSignalLike | undefined;
}

/**
 * `w` as `q` holds it, taken out at once when its client leaves (`w.left`), as the admission
 * queue's waiters are: one that left stayed counted, in `maxWaiting` and in the waiting gauge,
 * until its turn or its wait bound (a review: ~300 ms under a storm, up to `shedWaitMs`).
 */
export function _turnEntry(w: _TurnWaiter, q: _WaitQueue): _Waiter {
  const entry: _Waiter = { at: w.at, live: true, settle: (outcome) => w.go(typeof outcome === "number") };
  const signal = w.left;
  if (signal === undefined) return entry;
  const onAbort = () => {
    if (!entry.live) return;
    q.remove(entry); // detaches
    w.go("left");
  };
  signal.addEventListener("abort", onAbort, { once: true });
  entry.detach = () => signal.removeEventListener("abort", onAbort);
  return entry;
}

/**
 * How long one slice keeps starting waiters, in milliseconds (it starts at least one), unless
 * every waiter left fits in the room (then it empties the queue). Short against the load monitor's batch bound (25 ms): the loop goes round between slices, so
 * a started request waits at most a slice for the ones started before it, and Node accepts new
 * connections at a slice's pace. Measured with 2 ms handlers on Node, 1 ms and 4 ms slices gave
 * the same goodput; 1 ms halved the latency of the connections accepted late.
 */
export const TURN_SLICE_MS = 1;

/**
 * Whether a slice that has spent `spentMs` starting `started` waiters is over: past
 * {@linkcode TURN_SLICE_MS}, unless, at the cost per start so far, the `left` waiters all start
 * within `roomMs`. (The load gate's held starts on Deno follow the same rule.)
 */
export function _sliceOver(spentMs: number, started: number, left: number, roomMs: number): boolean {
  return spentMs >= TURN_SLICE_MS && spentMs + (spentMs / started) * left > roomMs;
}

/** A bounded LIFO of waiters with a wait bound, started in slices by the clock's setImmediate. */
export class _TurnQueue {
  readonly #q: _WaitQueue;
  #timer: TimerHandle | undefined = undefined;
  #closed = false;
  #held = false; // a slice found no pace: slices wait for wake()
  readonly #clock: Clock;
  readonly #pace: () => boolean;
  readonly #room: () => number;
  readonly maxWaiting: number;

  /**
   * `pace()` is asked before each start: false ends the slice, and slices resume at `wake()`.
   * `room()`: how long a turn may keep starting waiters now (the load monitor's batch bound
   * while it reads normal, 0 otherwise). Past {@linkcode TURN_SLICE_MS} a slice goes on only
   * when, at the cost per start measured so far, every waiter left starts within that room.
   */
  constructor(clock: Clock, waitMs: number, maxWaiting: number, pace: () => boolean, room: () => number = () => 0) {
    this.#clock = clock;
    this.#pace = pace;
    this.#room = room;
    this.maxWaiting = maxWaiting;
    // lifoAfterMs 0: a queue that is not empty is standing, so it serves newest first. Its
    // timer is off while slices run: every slice refuses the waiters past the bound first, and
    // a slice runs every loop turn while waiters remain; only held slices need it. A timer per
    // refusal cost Node ~1–2 % of goodput under a synchronous storm (~460 refusals a second).
    this.#q = new _WaitQueue(clock, waitMs, 0, undefined, Infinity, false);
  }

  get length(): number {
    return this.#q.length;
  }

  /** Adds a waiter; false (and not added) when the queue is full or closed. */
  push(w: _TurnWaiter): boolean {
    if (this.#closed || this.#q.length >= this.maxWaiting) return false;
    this.#q.push(_turnEntry(w, this.#q));
    if (!this.#held) this.#timer ??= this.#next();
    return true;
  }

  /** Slices may run again (the load monitor's probe ran): schedules one if waiters remain. */
  wake(): void {
    this.#held = false;
    this.#q.timed = false;
    if (this.#q.length > 0 && !this.#closed) this.#timer ??= this.#next();
  }

  /**
   * Takes no more waiters, and ends every one now: `admit` true starts them (the gate is going
   * away and reads normal from now on), false refuses them (a forced drain).
   */
  close(admit: boolean): void {
    this.#closed = true;
    this.#timer?.cancel();
    this.#timer = undefined;
    this.#q.timed = false;
    const now = this.#clock.now();
    this.#q.settleAll(now, admit ? now : "queue-timeout");
  }

  /** Settles the next time no request waits (at once if none does). */
  emptied(): Promise<void> {
    return this.#q.emptied();
  }

  // One slice: refuse the waiters past the wait bound, then start the newest one after another
  // while the slice lasts. After each start come the microtasks it queued (an async handler's
  // settling releases its permit there), so the slice counts the work each start set off
  // before the next; all of it runs within this turn, nothing here waits for a timer or I/O.
  // A slice that would empty the queue within the turn's room goes on to empty it: under a
  // closed loop the arrivals of one turn are the answers of the last, so a queue that one
  // slice cannot empty keeps its oldest waiters at the bottom until the wait bound refuses
  // them, even when every start is cheap (a loaded but healthy server after one long turn).
  #slice = async (): Promise<void> => {
    const clock = this.#clock;
    const start = clock.now();
    this.#q.expire(start);
    let started = 0;
    for (;;) {
      const length = this.#q.length;
      if (length === 0) break;
      const spent = clock.now() - start;
      if (_sliceOver(spent, started, length, this.#room())) break;
      if (!this.#pace()) {
        this.#held = true;
        break;
      }
      const now = clock.now();
      this.#q.take(now, Infinity)!.settle(now);
      started++;
      await undefined;
    }
    this.#timer = this.#q.length > 0 && !this.#closed && !this.#held ? this.#next() : undefined;
    // Held, no slice runs until wake(): the queue's own timer refuses each waiter at its bound.
    if (this.#held) this.#q.timed = true;
  };

  // The next slice: in the next loop turn, after the I/O pending now.
  #next(): TimerHandle {
    return this.#clock.setImmediate!(this.#slice);
  }
}
