import type { Clock, TimerHandle } from "./clock.ts";
import { systemClock } from "./clock.ts";
import { _durationMs, _options, _show, _given } from "./_validate.ts";

/** Options of {@linkcode createLoadMonitor}. */
export interface LoadMonitorOptions {
  /** How often the drift probe runs. Small enough to react within tens of milliseconds. @default 10 */
  sampleIntervalMs?: number;
  /** Event-loop delay at or above which the monitor turns busy. @default 40 */
  highWatermarkMs?: number;
  /** Event-loop delay at or below which a busy monitor turns normal again. @default 15 */
  lowWatermarkMs?: number;
  /** While busy, the smallest share of new requests still admitted, so progress never stops. @default 0.05 */
  minAdmitShare?: number;
  /** Weight of the newest sample in the smoothed delay (EWMA). @default 0.2 */
  smoothing?: number;
  /** `shouldDefer()` is true while the smoothed delay is above this. @default lowWatermarkMs */
  deferAboveMs?: number;
  /** The Retry-After hint of a refusal. @default 1000 */
  retryAfterMs?: number;
  /** @default systemClock */
  clock?: Clock;
}

/** Gate 3: event-loop delay with hysteresis, read per request. */
export interface LoadMonitor {
  /** Binary state with hysteresis: busy from the high watermark until back at the low one. */
  readonly busy: boolean;
  /** The newest delay sample, in ms. */
  readonly delayMs: number;
  /** The EWMA-smoothed delay, in ms. */
  readonly smoothedDelayMs: number;
  /** The share of new requests admitted while busy (1 when normal). */
  readonly admitShare: number;
  /** Whether the probe is running. A monitor that is not running reads as normal (fails open). */
  readonly running: boolean;
  readonly retryAfterMs: number;
  /** Feeds one delay sample (the probe does this; tests and native sources may too). */
  record(delayMs: number): void;
  /**
   * Whether to admit a new request arriving at `now`. Normal: yes. Busy, or the loop stalled
   * right now (the probe is overdue by the high watermark — a synchronous batch is running):
   * a share that follows the measured delay.
   */
  admit(now?: number): boolean;
  /** The softer question for background work: is the loop slower than it should be? */
  shouldDefer(): boolean;
  /** Starts the probe (an unref'd interval). Idempotent. */
  start(): void;
  /** Stops the probe; the monitor reads normal from then on. */
  dispose(): void;
}

/**
 * A portable event-loop load monitor: a timer-drift probe (a native histogram is unreliable
 * on Deno, and utilisation reads zero off Node), high and low watermarks with hysteresis,
 * and admission shaped by the measured delay while busy instead of all-or-nothing. It is the
 * only gate that can act when handlers are synchronous and CPU-bound: then the in-flight
 * count never passes 1 and the queue sits in the kernel, but every request that arrives
 * while the probe is overdue is evidence of a stalled loop.
 *
 * @example
 * ```ts
 * import { createLoadMonitor, createManualClock } from "serve-hygiene";
 * const monitor = createLoadMonitor({ clock: createManualClock() });
 * monitor.start();
 * monitor.record(500);
 * console.assert(monitor.busy);
 * monitor.record(5);
 * console.assert(!monitor.busy);
 * monitor.dispose();
 * ```
 */
export function createLoadMonitor(options?: LoadMonitorOptions): LoadMonitor {
  const what = "create load monitor";
  const o = _options(what, options);
  const interval = _durationMs(what, "sampleIntervalMs", _given(o.sampleIntervalMs, 10));
  const high = _durationMs(what, "highWatermarkMs", _given(o.highWatermarkMs, 40));
  const low = _durationMs(what, "lowWatermarkMs", _given(o.lowWatermarkMs, 15));
  if (low >= high) {
    throw new RangeError(`Cannot ${what} as "lowWatermarkMs" must be below "highWatermarkMs": current values are ${low} and ${high}`);
  }
  const minShare = _share(what, "minAdmitShare", _given(o.minAdmitShare, 0.05));
  const alpha = _share(what, "smoothing", _given(o.smoothing, 0.2));
  const deferAbove = _durationMs(what, "deferAboveMs", _given(o.deferAboveMs, low));
  const retryAfterMs = _durationMs(what, "retryAfterMs", _given(o.retryAfterMs, 1000));
  const clock = o.clock ?? systemClock;

  let busy = false;
  let delay = 0;
  let smoothed = 0;
  let share = 1;
  let credit = 0;
  let lastTick = 0;
  let probe: TimerHandle | undefined;

  const record = (sample: number) => {
    delay = sample;
    smoothed = alpha * sample + (1 - alpha) * smoothed;
    if (!busy && sample >= high) busy = true;
    else if (busy && sample <= low) busy = false;
    // Multiplicative: each sample scales the admitted share toward the low watermark.
    share = busy ? Math.min(1, Math.max(minShare, (share * low) / Math.max(sample, 1))) : 1;
  };

  const tick = () => {
    const now = clock.now();
    record(Math.max(0, now - lastTick - interval));
    lastTick = now;
  };

  const monitor: LoadMonitor = {
    get busy() {
      return probe !== undefined && busy;
    },
    get delayMs() {
      return delay;
    },
    get smoothedDelayMs() {
      return smoothed;
    },
    get admitShare() {
      return share;
    },
    get running() {
      return probe !== undefined;
    },
    retryAfterMs,
    record,
    admit(now = clock.now()) {
      if (probe === undefined) return true;
      const stalled = now - lastTick - interval >= high;
      if (!busy && !stalled) return true;
      if (stalled) return false; // this batch is already too long: add nothing to it
      credit += share;
      if (credit < 1 - 1e-9) return false; // tolerate float drift: a share of 0.1 admits exactly 1 in 10
      credit -= 1;
      return true;
    },
    shouldDefer() {
      return probe !== undefined && smoothed > deferAbove;
    },
    start() {
      if (probe !== undefined) return;
      lastTick = clock.now();
      probe = clock.setInterval(tick, interval, { unref: true });
    },
    dispose() {
      probe?.cancel();
      probe = undefined;
      busy = false;
      share = 1;
    },
  };
  return monitor;
}

function _share(what: string, field: string, value: unknown): number {
  if (typeof value !== "number" || !(value > 0 && value <= 1)) {
    throw new RangeError(`Cannot ${what} as "${field}" must be a number in (0, 1]: current value is ${_show(value)}`);
  }
  return value;
}
