import type { Clock, TimerHandle } from "../clock.ts";
import { systemClock } from "../clock.ts";
import { _durationMs, _given, _options, _show } from "../_validate.ts";

/** Schedules per-request deadlines. */
export interface Deadlines {
  /** Runs `fn` about `delayMs` from now (never earlier); cancel when the request ends first. */
  schedule(delayMs: number, fn: () => void, now?: number): TimerHandle;
  /** Deadlines scheduled and neither fired nor cancelled. */
  readonly pending: number;
}

/** Options of {@linkcode createDeadlineWheel}. */
export interface DeadlineWheelOptions {
  /**
   * The wheel's tick: a deadline fires at most this much late. Requests are cut at 408 by
   * a coarse bound, so a few milliseconds of lateness buy one timer for all of them.
   * @default 10
   */
  resolutionMs?: number;
  /** @default systemClock */
  clock?: Clock;
}

// The entry is its own cancel handle: one allocation per deadline.
class _Entry implements TimerHandle {
  constructor(
    readonly fn: () => void,
    public slot: Set<_Entry> | undefined,
    readonly onCancel: () => void,
  ) {}

  cancel(): void {
    if (this.slot === undefined) return;
    this.slot.delete(this);
    this.slot = undefined;
    this.onCancel();
  }
}

/**
 * One shared, unref'd interval timer holding every request's deadline in slots of
 * `resolutionMs`, instead of a timer per request. The interval runs only while deadlines
 * are pending (and for at most one tick after the last one ends), so an idle process — or
 * a serverless isolate — holds no timer.
 *
 * @example
 * ```ts
 * import { createManualClock } from "serve-hygiene";
 * import { createDeadlineWheel } from "./deadline_wheel.ts";
 * const clock = createManualClock();
 * const wheel = createDeadlineWheel({ clock, resolutionMs: 10 });
 * let fired = false;
 * wheel.schedule(25, () => (fired = true));
 * clock.advance(30);
 * console.assert(fired && wheel.pending === 0);
 * ```
 */
export function createDeadlineWheel(options?: DeadlineWheelOptions): Deadlines {
  const o = _options("create deadline wheel", options);
  const resolution = _durationMs("create deadline wheel", "resolutionMs", _given(o.resolutionMs, 10));
  const clock = o.clock ?? systemClock;
  const slots = new Map<number, Set<_Entry>>();
  let pending = 0;
  let ticker: TimerHandle | undefined;
  let swept = -1; // the last slot index already fired
  // The ticker stops at its next tick if nothing is pending by then: stopping it on the
  // last cancel would start and stop an interval for every request of a quiet server.
  const onCancel = () => void pending--;

  const tick = () => {
    const current = Math.floor(clock.now() / resolution);
    for (let i = swept + 1; i <= current; i++) {
      const slot = slots.get(i);
      if (slot === undefined) continue;
      slots.delete(i);
      for (const entry of slot) {
        entry.slot = undefined;
        pending--;
        entry.fn();
      }
    }
    swept = current;
    if (pending === 0 && ticker !== undefined) {
      ticker.cancel();
      ticker = undefined;
      slots.clear();
    }
  };

  return {
    schedule(delayMs, fn, now = clock.now()) {
      if (ticker === undefined) {
        swept = Math.floor(now / resolution);
        ticker = clock.setInterval(tick, resolution, { unref: true });
      }
      // Round up: a deadline may fire late by under one tick, never early (and never into
      // a slot already swept).
      const index = Math.max(Math.ceil((now + delayMs) / resolution), swept + 1);
      let slot = slots.get(index);
      if (slot === undefined) slots.set(index, (slot = new Set()));
      const entry = new _Entry(fn, slot, onCancel);
      slot.add(entry);
      pending++;
      return entry;
    },
    get pending() {
      return pending;
    },
  };
}

/**
 * One clock timer per deadline: exact, and the baseline the wheel is measured against.
 *
 * @example
 * ```ts
 * import { createManualClock } from "serve-hygiene";
 * import { createTimerDeadlines } from "./deadline_wheel.ts";
 * const clock = createManualClock();
 * const deadlines = createTimerDeadlines(clock);
 * deadlines.schedule(5, () => {}).cancel();
 * console.assert(deadlines.pending === 0);
 * ```
 */
export function createTimerDeadlines(clock: Clock = systemClock): Deadlines {
  let pending = 0;
  return {
    schedule(delayMs, fn) {
      pending++;
      let live = true;
      const timer = clock.setTimeout(() => {
        live = false;
        pending--;
        fn();
      }, delayMs);
      return {
        cancel() {
          if (!live) return;
          live = false;
          pending--;
          timer.cancel();
        },
      };
    },
    get pending() {
      return pending;
    },
  };
}

/**
 * The deadlines of a guard: `"wheel"` (one shared timer, measured faster on all three
 * runtimes) or `"timers"` (one per request). Anything else is a TypeError.
 *
 * @example
 * ```ts
 * import { createManualClock } from "serve-hygiene";
 * import { createDeadlines } from "./deadline_wheel.ts";
 * const deadlines = createDeadlines("wheel", createManualClock());
 * console.assert(deadlines.pending === 0);
 * ```
 */
export function createDeadlines(kind: "wheel" | "timers", clock: Clock = systemClock): Deadlines {
  if (kind === "wheel") return createDeadlineWheel({ clock });
  if (kind === "timers") return createTimerDeadlines(clock);
  throw new TypeError(`Cannot create guard as "deadlines" must be "wheel" or "timers": current value is ${_show(kind)}`);
}
