import type { Clock, TimerHandle } from "../clock.ts";
import { systemClock } from "../clock.ts";
import { _durationMs, _given, _options, _show } from "../_validate.ts";

/** Schedules per-request deadlines. */
export interface Deadlines {
  /**
   * Runs `fn(arg)` about `delayMs` from now (never earlier); cancel when the request ends
   * first. `arg` spares the caller a closure a deadline.
   */
  schedule<T>(delayMs: number, fn: (arg: T) => void, now?: number, arg?: T): TimerHandle;
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
  resolutionMs?: number | undefined;
  /** @default systemClock */
  clock?: Clock | undefined;
}

// Where an entry waits: the list of entries scheduled since the last tick, or its slot.
const _FRESH = "fresh";

// The entry is its own cancel handle: one allocation per deadline.
class _Entry implements TimerHandle {
  constructor(
    readonly fn: (arg: unknown) => void,
    public arg: unknown,
    /** The slot it fires in (the tick index). */
    readonly index: number,
    public slot: Set<_Entry> | typeof _FRESH | undefined,
    readonly onCancel: (slot: Set<_Entry> | undefined, index: number) => void,
  ) {}

  cancel(): void {
    const slot = this.slot;
    if (slot === undefined) return;
    // A fresh entry is only marked: the next tick drops it (no set to delete it from).
    if (slot !== _FRESH) slot.delete(this);
    this.slot = undefined;
    // A cancelled fresh entry stays on the list until the next tick: it must not keep the
    // request it was for (its admission, and all that holds) alive until then.
    this.arg = undefined;
    this.onCancel(slot === _FRESH ? undefined : slot, this.index);
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
  // Deadlines scheduled since the last tick. Most requests end well within one tick, so a
  // deadline first goes on this list (an array push) and is cancelled by a mark; a tick moves
  // the ones still pending into their slots. A slot's set is paid only by a request that
  // outlives a tick.
  let fresh: _Entry[] = [];
  let pending = 0;
  let ticker: TimerHandle | undefined;
  let swept = -1; // the last slot index already fired
  // The ticker stops at its next tick if nothing is pending by then: stopping it on the
  // last cancel would start and stop an interval for every request of a quiet server.
  // A slot its cancels emptied goes at once: left for the sweep, a route with an hour's deadline
  // kept a set a tick for an hour while any other deadline was pending (a soak review).
  const onCancel = (slot: Set<_Entry> | undefined, index: number) => {
    pending--;
    if (slot !== undefined && slot.size === 0 && slots.get(index) === slot) slots.delete(index);
  };

  const fire = (entry: _Entry) => {
    entry.slot = undefined;
    pending--;
    entry.fn(entry.arg);
  };

  // Fires slot `i`'s deadlines, if it holds any.
  const sweep = (i: number) => {
    const slot = slots.get(i);
    if (slot === undefined) return;
    slots.delete(i);
    for (const entry of slot) fire(entry);
  };

  const tick = () => {
    const current = Math.floor(clock.now() / resolution);
    const arrived = fresh;
    fresh = [];
    for (const entry of arrived) {
      if (entry.slot !== _FRESH) continue; // cancelled since
      if (entry.index <= current) {
        fire(entry);
        continue;
      }
      let slot = slots.get(entry.index);
      if (slot === undefined) slots.set(entry.index, (slot = new Set()));
      entry.slot = slot;
      slot.add(entry);
    }
    if (slots.size > 0 && current - swept <= Math.max(64, slots.size)) {
      for (let i = swept + 1; i <= current; i++) sweep(i);
    } else if (slots.size > 0) {
      // More slots passed than are held: a paused process (a frozen container, SIGSTOP) woke up.
      // Stepping through every index cost a synchronous 137 ms a day of pause (a review):
      // the held slots are visited instead, the earliest first.
      for (const i of [...slots.keys()].filter((i) => i <= current).sort((x, y) => x - y)) sweep(i);
    }
    swept = current;
    if (pending === 0 && ticker !== undefined) {
      ticker.cancel();
      ticker = undefined;
      slots.clear();
      fresh = [];
    }
  };

  return {
    schedule(delayMs, fn, now = clock.now(), arg) {
      if (ticker === undefined) {
        swept = Math.floor(now / resolution);
        ticker = clock.setInterval(tick, resolution, { unref: true });
      }
      // Round up: a deadline may fire late by under one tick, never early (and never into
      // a slot already swept).
      const index = Math.max(Math.ceil((now + delayMs) / resolution), swept + 1);
      const entry = new _Entry(fn as (arg: unknown) => void, arg, index, _FRESH, onCancel);
      fresh.push(entry);
      pending++;
      return entry;
    },
    get pending() {
      return pending;
    },
    /** Slots holding deadlines (tests). */
    get slots() {
      return slots.size;
    },
  } as Deadlines;
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
    schedule(delayMs, fn, _now, arg) {
      pending++;
      let live = true;
      const timer = clock.setTimeout(() => {
        live = false;
        pending--;
        fn(arg!);
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
