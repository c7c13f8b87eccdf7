import type { Clock, TimerHandle } from "../../src/core/mod.ts";

/**
 * A hand-driven clock with immediates, for the load gate's later turns: `now()` reads `t`
 * (tests move it, handlers "burn" by adding to it), timers never fire on their own (the load
 * monitor's probe runs only when `runIntervals()` is called), and `runImmediates()` runs the
 * immediates scheduled so far — one loop turn's worth — returning how many ran.
 */
export interface TurnClock extends Clock {
  t: number;
  readonly pendingImmediates: number;
  runImmediates(): number;
  /** Runs every live interval once (the load monitor's probe: a turn ends). */
  runIntervals(): void;
}

export function createTurnClock(start = 1000): TurnClock {
  let immediates: { fn: () => void; live: boolean }[] = [];
  const idle: TimerHandle = { cancel() {} };
  const intervals = new Set<() => void>();
  const clock: TurnClock = {
    t: start,
    now: () => clock.t,
    setTimeout: () => idle,
    setInterval(fn) {
      intervals.add(fn);
      return { cancel: () => void intervals.delete(fn) };
    },
    runIntervals() {
      for (const fn of [...intervals]) fn();
    },
    setImmediate(fn) {
      const entry = { fn, live: true };
      immediates.push(entry);
      return { cancel: () => void (entry.live = false) };
    },
    get pendingImmediates() {
      return immediates.filter((e) => e.live).length;
    },
    runImmediates() {
      const due = immediates;
      immediates = [];
      let ran = 0;
      for (const e of due) {
        if (!e.live) continue;
        e.live = false;
        ran++;
        e.fn();
      }
      return ran;
    },
  };
  return clock;
}
