import { _nonNegativeInt, type Clock, type TimerHandle } from "../core/mod.ts";

/** A {@linkcode Clock} that moves only when told to. */
export interface ManualClock extends Clock {
  /**
   * Moves time forward by `ms`, running every timer that falls due on the way, in due
   * order (ties in scheduling order), with `now()` reading each timer's due time while it
   * runs.
   */
  advance(ms: number): void;
  /** Timers scheduled and not yet run or cancelled. */
  readonly pendingTimers: number;
}

interface _Timer {
  due: number;
  seq: number;
  fn: () => void;
  every: number | undefined;
  live: boolean;
}

/**
 * A hand-driven clock for tests: time stands still until `advance` is called.
 *
 * @example
 * ```ts
 * import { createManualClock } from "serve-hygiene";
 * const clock = createManualClock();
 * let fired = 0;
 * clock.setTimeout(() => fired++, 100);
 * clock.advance(99);
 * console.assert(fired === 0);
 * clock.advance(1);
 * console.assert(fired === 1 && clock.now() === 100);
 * ```
 */
export function createManualClock(start = 0): ManualClock {
  let now = start;
  let seq = 0;
  let timers: _Timer[] = [];

  const add = (fn: () => void, ms: number, every: number | undefined): TimerHandle => {
    const timer: _Timer = { due: now + Math.max(0, ms), seq: seq++, fn, every, live: true };
    timers.push(timer);
    return {
      cancel: () => {
        timer.live = false;
      },
    };
  };

  const next = (limit: number): _Timer | undefined => {
    timers = timers.filter((t) => t.live);
    let best: _Timer | undefined;
    for (const t of timers) {
      if (t.due <= limit && (best === undefined || t.due < best.due || (t.due === best.due && t.seq < best.seq))) {
        best = t;
      }
    }
    return best;
  };

  return {
    now: () => now,
    setTimeout: (fn, ms) => add(fn, ms, undefined),
    // An interval of 0 would fire forever within one advance; one millisecond is the floor.
    setInterval: (fn, ms) => add(fn, Math.max(1, ms), Math.max(1, ms)),
    advance(ms: number) {
      const target = now + _nonNegativeInt("advance the clock", "ms", ms);
      for (let t = next(target); t !== undefined; t = next(target)) {
        now = t.due;
        if (t.every === undefined) t.live = false;
        else {
          t.due += t.every;
          t.seq = seq++;
        }
        t.fn();
      }
      now = target;
    },
    get pendingTimers() {
      return timers.filter((t) => t.live).length;
    },
  };
}
