import type { Clock, TimerHandle } from "../clock.ts";
import { systemClock } from "../clock.ts";
import { _durationMs, _options, _show, _given, MAX_TIMER_MS, type _KeyList } from "../_validate.ts";

/** Options of {@linkcode createLoadMonitor}. */
export interface LoadMonitorOptions {
  /** How often the drift probe runs while requests arrive. Small enough to react within tens of milliseconds. @default 10 */
  sampleIntervalMs?: number | undefined;
  /** Event-loop delay at or above which the monitor turns busy; a request arriving while the probe is this overdue is refused. @default 40 */
  highWatermarkMs?: number | undefined;
  /** Delay at or below which a busy monitor turns normal again, and up to which every request is admitted. @default 15 */
  lowWatermarkMs?: number | undefined;
  /** The smallest share of new requests still admitted, so progress never stops. @default 0.05 */
  minAdmitShare?: number | undefined;
  /** Weight of the newest sample in the smoothed delay (EWMA) that the admitted share follows. @default 0.2 */
  smoothing?: number | undefined;
  /** The most the admitted share rises per sample, so it climbs back over several samples after a busy period. @default 0.1 */
  recoveryStep?: number | undefined;
  /**
   * With no request for this long (and the share back at 1) the probe stops, so an idle process
   * is not woken 100 times a second; the next request restarts it. `Infinity` keeps it running.
   * @default 1000
   */
  idleAfterMs?: number | undefined;
  /**
   * The longest one event-loop turn keeps admitting: a request read when the turn's first
   * admission is older than this is refused (reason `"batch"`), and so is the rest of the turn.
   * It bounds what synchronous handlers add to one turn, so admitted latency stays bounded; a
   * turn ends when the probe runs. With the default, a turn this long has delayed the probe by
   * more than the low watermark, so the bound never refuses at normal load. `Infinity` turns it off.
   * (The guard's load gate asks for 10 ms where it holds its refusals — no `setImmediate`:
   * Deno — while some are held and no permit is in use.)
   * @default sampleIntervalMs + lowWatermarkMs
   */
  maxBatchMs?: number | undefined;
  /** `shouldDefer()` is true while the smoothed delay is above this. @default lowWatermarkMs */
  deferAboveMs?: number | undefined;
  /** The Retry-After hint of a refusal. @default 1000 */
  retryAfterMs?: number | undefined;
  /** The time source of the probe and of `admit()`. @default systemClock */
  clock?: Clock | undefined;
}

/**
 * Why the load monitor refuses a request: `"batch"`, this loop turn has been admitting for
 * longer than `maxBatchMs`; `"busy"`, the loop is stalled past the high watermark right now,
 * or the request falls outside the admitted share.
 */
export type LoadRefusal = "busy" | "batch";

/** Gate 3: event-loop delay with hysteresis, read per request. */
export interface LoadMonitor {
  /** Binary state with hysteresis: busy from a sample at the high watermark until one at the low one. */
  readonly busy: boolean;
  /** The newest delay sample, in ms. */
  readonly delayMs: number;
  /** The EWMA-smoothed delay, in ms. */
  readonly smoothedDelayMs: number;
  /**
   * The share of new requests admitted: 1 while the smoothed delay is at or below the low
   * watermark, `low / delay` above it (never below `minAdmitShare`), where the delay is the
   * smoothed one — or, while busy, the newest sample if that is worse. It falls at once and
   * rises by at most `recoveryStep` a sample. 1 while not running.
   */
  readonly admitShare: number;
  /**
   * Whether the probe is running: not before `start()`, not after `dispose()`, and not while
   * idle (no request for `idleAfterMs`). A monitor that is not running reads as normal (fails open).
   */
  readonly running: boolean;
  readonly retryAfterMs: number;
  /** The batch bound in ms (`Infinity`: off). */
  readonly maxBatchMs: number;
  /** Feeds one delay sample (the probe does this; tests and native sources may too). */
  record(delayMs: number): void;
  /**
   * Whether to admit a new request arriving at `now`. Refused when this loop turn has been
   * admitting for longer than `maxBatchMs`, or when the loop is stalled right now (the probe
   * is overdue by the high watermark); otherwise `admitShare` of the requests, spread evenly. A probe stopped for idleness
   * restarts here, and this request is admitted (nothing measured yet).
   */
  admit(now?: number): boolean;
  /**
   * The same decision as {@linkcode LoadMonitor.admit}, with its reason: `undefined` admits;
   * `"batch"` when this turn's first admission is older than `maxBatchMs` (checked first);
   * `"busy"` when the loop is stalled past the high watermark or the share says no.
   * `maxBatchMs`: a shorter batch bound for this request (the load gate's, while it holds
   * refusals; see gates/load.ts); at most the monitor's own.
   */
  refusal(now?: number, maxBatchMs?: number): LoadRefusal | undefined;
  /**
   * Whether work put off to a later turn (and started in short slices of its own, so neither the
   * batch bound nor the share applies) may start at `now`: false while the loop is stalled right
   * now (the probe overdue by the high watermark). True while not running. Not the busy state:
   * holding waiters for its whole spell idled a loaded server (an I/O-bound storm lost ~20 % of
   * its goodput on Node), while the slices bound their own turns. Each call counts as a request
   * for `idleAfterMs` (a probe stopped for idleness restarts here).
   */
  pace(now?: number): boolean;
  /**
   * Calls `listener` each time the probe runs (after it read its sample and ended the turn):
   * work put off while the share said no is looked at again there. Returns its remover.
   */
  onTurn(listener: () => void): () => void;
  /** The softer question for background work: is the loop slower than it should be? */
  shouldDefer(): boolean;
  /** Starts the probe (an unref'd interval). Idempotent. */
  start(): void;
  /** Stops the probe for good (a request does not restart it); the monitor reads normal from then on. */
  dispose(): void;
}

/** The shortest probe delay read as a frozen process rather than a stalled loop (see tick). */
const FROZEN_MIN_MS = 1000;

/** Every option of {@linkcode LoadMonitorOptions}: any other key is refused (_validate.ts `_onlyKnown`). */
export const _LOAD_MONITOR_KEYS: _KeyList<LoadMonitorOptions> = { sampleIntervalMs: true, highWatermarkMs: true, lowWatermarkMs: true, minAdmitShare: true, smoothing: true, recoveryStep: true, idleAfterMs: true, maxBatchMs: true, deferAboveMs: true, retryAfterMs: true, clock: true };

/**
 * A portable event-loop load monitor: a timer-drift probe (a native histogram is unreliable
 * on Deno, and utilisation reads zero off Node), high and low watermarks with hysteresis,
 * and admission shaped by the measured delay instead of all-or-nothing. It is the only gate
 * that can act when handlers are synchronous and CPU-bound: then the in-flight count never
 * passes 1 and the queue sits in the kernel, but every request that arrives while the probe
 * is overdue is evidence of a stalled loop.
 *
 * The admitted share is a function of the smoothed delay, not of its own past value: a steady
 * delay gives a steady share (20 ms → 0.75, 30 ms → 0.5 with the default watermarks), and
 * at or below the low watermark everything is admitted. After a busy period the share climbs
 * back a step a sample. With no request for `idleAfterMs` the probe stops, and the next
 * request restarts it.
 *
 * Per request it also bounds the batch: synchronous handlers run inside the turn that reads
 * their requests, so a turn that keeps admitting keeps everyone after it waiting. Once the
 * turn's first admission is `maxBatchMs` old the rest of the turn is refused; the turn ends
 * when the probe runs (a timer runs only between turns). Async handlers admitted cheaply in
 * one turn and burning in later ones never trip it: their burst is the concurrency limit's.
 *
 * @example A stall, then a gradual recovery
 * ```ts
 * import { createManualClock } from "serve-hygiene";
 * import { createLoadMonitor } from "./load_monitor.ts";
 * const monitor = createLoadMonitor({ clock: createManualClock() });
 * monitor.start();
 * monitor.record(500); // a 500 ms stall: busy, the share drops to the floor at once
 * console.assert(monitor.busy && monitor.admitShare === 0.05);
 * monitor.record(5); // one good sample: normal again, but the share only climbs a step
 * console.assert(!monitor.busy && monitor.admitShare < 1);
 * monitor.dispose();
 * ```
 *
 * @example A synchronous turn is cut at the batch bound
 * ```ts
 * import { createManualClock } from "serve-hygiene";
 * import { createLoadMonitor } from "./load_monitor.ts";
 * const clock = createManualClock();
 * const monitor = createLoadMonitor({ clock, maxBatchMs: 25 });
 * monitor.start();
 * const t = clock.now();
 * console.assert(monitor.refusal(t) === undefined); // the turn's first admission
 * console.assert(monitor.refusal(t + 20) === undefined); // handlers have run 20 ms: still within
 * console.assert(monitor.refusal(t + 26) === "batch"); // the rest of this turn is refused
 * clock.advance(10); // the probe runs: the turn is over
 * console.assert(monitor.refusal(clock.now()) === undefined);
 * monitor.dispose();
 * ```
 */
export function createLoadMonitor(options?: LoadMonitorOptions): LoadMonitor {
  const what = "create load monitor";
  const o = _options(what, options, _LOAD_MONITOR_KEYS);
  const interval = _durationMs(what, "sampleIntervalMs", _given(o.sampleIntervalMs, 10));
  const high = _durationMs(what, "highWatermarkMs", _given(o.highWatermarkMs, 40));
  const low = _durationMs(what, "lowWatermarkMs", _given(o.lowWatermarkMs, 15));
  if (low >= high) {
    throw new RangeError(`Cannot ${what} as "lowWatermarkMs" must be below "highWatermarkMs": current values are ${low} and ${high}`);
  }
  const minShare = _share(what, "minAdmitShare", _given(o.minAdmitShare, 0.05));
  const alpha = _share(what, "smoothing", _given(o.smoothing, 0.2));
  const step = _share(what, "recoveryStep", _given(o.recoveryStep, 0.1));
  const idleAfter = _durationMs(what, "idleAfterMs", _given(o.idleAfterMs, 1000), { infinity: true });
  const maxBatch = _durationMs(what, "maxBatchMs", _given(o.maxBatchMs, Math.min(interval + low, MAX_TIMER_MS)), { infinity: true });
  const deferAbove = _durationMs(what, "deferAboveMs", _given(o.deferAboveMs, low));
  const retryAfterMs = _durationMs(what, "retryAfterMs", _given(o.retryAfterMs, 1000));
  const clock = o.clock ?? systemClock;
  // A probe this overdue measured a process that was not running, not a loop (see tick): at
  // least a second and ten high watermarks, so a short idleAfterMs cannot hide real stalls.
  const frozenAfter = Math.max(idleAfter, FROZEN_MIN_MS, 10 * high);

  let busy = false;
  let delay = 0;
  let smoothed = 0;
  let share = 1;
  let credit = 0;
  let lastTick = 0;
  let lastRequest = 0;
  let batchStart = NaN; // the current turn's first admission; NaN until one (the probe ends a turn)
  let probe: TimerHandle | undefined;
  let idle = false; // stopped for lack of requests: the next admit() restarts the probe
  const turnListeners = new Set<() => void>();

  // The share a delay calls for: everything up to the low watermark, then the share that
  // would bring a delay proportional to admitted work back to it. A function of the delay,
  // never of the previous share, so a steady delay holds a steady share instead of a ratchet.
  const target = (d: number) => (d <= low ? 1 : Math.max(minShare, low / d));

  const record = (sample: number) => {
    delay = sample;
    smoothed = alpha * sample + (1 - alpha) * smoothed;
    if (!busy && sample >= high) busy = true;
    else if (busy && sample <= low) busy = false;
    // While busy the newest sample counts when it is worse (a stall is acted on within one
    // sample, not after the EWMA catches up); the share falls at once and climbs a step a sample.
    share = Math.min(target(busy ? Math.max(smoothed, sample) : smoothed), share + step);
    if (share >= 1) credit = 0; // each restricted spell starts from no credit
  };

  const begin = (now: number) => {
    idle = false;
    lastTick = now;
    lastRequest = now;
    batchStart = NaN;
    probe = clock.setInterval(tick, interval, { unref: true });
  };

  const tick = () => {
    const now = clock.now();
    const late = now - lastTick - interval;
    // Overdue by frozenAfter or more (idleAfterMs, at least 1 s), the probe did not measure a
    // loop slow to come round but a process that was not running (frozen between serverless
    // invocations, a paused container, a suspended host): not a delay to smooth, the next
    // probe measures afresh (read as one, Deno refused the first requests after a thaw while
    // the smoothed delay came down).
    if (late < frozenAfter) record(Math.max(0, late));
    lastTick = now;
    batchStart = NaN; // a timer runs only between turns: the next admission starts a new batch
    // Quiet and calm: stop the probe, so an idle server sleeps. Never while the share recovers.
    if (share >= 1 && !busy && now - lastRequest >= idleAfter) {
      probe?.cancel();
      probe = undefined;
      idle = true;
    }
    for (const listener of turnListeners) listener();
  };

  const stalled = (now: number) => now - lastTick - interval >= high; // right now, not by admissions

  // A request at `now` (or a put-off one starting: while every arrival waits, only those start)
  // keeps the probe from stopping for idleness, and restarts one stopped for it, measured from
  // now: the idle gap is not a stall. Whether the probe was running (a restarted one has
  // measured nothing yet).
  const noteRequest = (now: number): boolean => {
    lastRequest = now;
    if (probe !== undefined) return true;
    if (idle) begin(now);
    return false;
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
      return probe === undefined ? 1 : share;
    },
    get running() {
      return probe !== undefined;
    },
    retryAfterMs,
    maxBatchMs: maxBatch,
    record,
    admit(now = clock.now()) {
      return monitor.refusal(now) === undefined;
    },
    refusal(now = clock.now(), batchMs = maxBatch) {
      if (!noteRequest(now)) return undefined;
      if (now - batchStart > Math.min(batchMs, maxBatch)) return "batch"; // false while NaN: no admission yet this turn
      if (stalled(now)) return "busy"; // add nothing
      if (share < 1) {
        credit += share;
        if (credit < 1 - 1e-9) return "busy"; // tolerate float drift: a share of 0.1 admits exactly 1 in 10
        credit -= 1;
      }
      if (batchStart !== batchStart) batchStart = now;
      return undefined;
    },
    pace(now = clock.now()) {
      return !noteRequest(now) || !stalled(now);
    },
    onTurn(listener) {
      const own = () => listener(); // one entry per registration, removed by its own remover
      turnListeners.add(own);
      return () => void turnListeners.delete(own);
    },
    shouldDefer() {
      return probe !== undefined && smoothed > deferAbove;
    },
    start() {
      if (probe === undefined) begin(clock.now());
    },
    dispose() {
      probe?.cancel();
      probe = undefined;
      idle = false;
      busy = false;
      share = 1;
      credit = 0;
      batchStart = NaN;
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
