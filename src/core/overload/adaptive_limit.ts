// The concurrency limit found from handler latency (DESIGN.md "Overload control"): a
// latency-gradient limiter of the Gradient2 / Envoy adaptive-concurrency family. Each window
// compares the mean latency of the requests that completed in it (short) with a baseline (the
// lowest window mean seen: the latency with no queue in this process), and sets
//   limit = limit × gradient + queue allowance,   gradient = clamp(tolerance × baseline / short, 0.5, 1)
// smoothed on the way down (unless a window over twice tolerance queues here: it halves), clamped to
// [minLimit, maxLimit]; it starts at its floor and doubles
// a window until the latency first goes over tolerance (slow start, its windows shorter once
// the baseline is read; requests waiting meanwhile are not refused as a standing queue: see
// `rampedAt`, and those whose wait bound comes first are admitted over it). Where it departs
// from Gradient2,
// each departure answers one of its reported failure modes:
// - the queue allowance is added only while the gradient is 1 (Netflix concurrency-limits
//   #134): with it added at every gradient, a moderate overload (gradient ≈ 0.8) creeps up;
// - the baseline never follows the short latency up on its own (Gradient2's long-window EWMA
//   does, which makes a steady overload, or a steady timeout, look normal: #137). It rises only
//   when halving the limit did not lower the latency — the latency is then not queueing in
//   this process (an upstream got slower), and throttling would only cut throughput;
// - there is no periodic minimum-RTT re-measurement (Envoy drops to its floor for it, a burst
//   of 503s each time): the baseline falls whenever a window is faster (while work held from
//   before the window gives no sample, only by the share of the window's permits taken in it,
//   from where it stood when that work began: see `close`), and rises as above;
// - the limit does not grow while fewer than half its permits were used in the window
//   (app-limited: the latency says nothing about a limit that was not reached);
// - work that holds its permit for long (long polls) gives no sample until it ends: when
//   waiters time out while no permit came back for a whole wait bound, the limit grows by the
//   queue allowance (`stalled`), so long-held permits do not pin it at its start;
// - and such work is not learned from: permits held since before the current window (`long`)
//   do not count as used, and the limit grows for them only as lent, given back once they have
//   gone (counted in, long polls doubled a limit still in slow start up to maxLimit).
// Only requests that completed normally are samples; the concurrency limit decides which.
import { _options, _positiveInt, _given, _fail, _durationMs, type _KeyList } from "../_validate.ts";
import { _LatencyKinds } from "./_latency_kinds.ts";
import { _divisor, _follow, _rebase, type _Baseline } from "./_baseline.ts";

/** Options of {@linkcode createAdaptiveLimit}. */
export interface AdaptiveLimitOptions {
  /**
   * The limit before any window closed. Small, so that the first baseline is measured with
   * (almost) no queue in the process: from a large start, CPU-bound work would already queue
   * behind itself in the first window and the baseline would include that wait.
   * @default minLimit (1)
   */
  initialLimit?: number | undefined;
  /** The floor: the limit never falls below it. @default 1 */
  minLimit?: number | undefined;
  /** The ceiling: the limit never grows past it. @default 1000 */
  maxLimit?: number | undefined;
  /**
   * How much slower than the baseline a window may be before the limit shrinks: at 1.5 a
   * window whose mean latency is within 1.5× the baseline lets the limit grow. Gradient2's
   * default; at 2 the limit settled where requests took twice their no-queue latency (an
   * I/O-bound storm: about twice the concurrency the core could serve, its latency paid as
   * queueing in the event loop).
   * @default 1.5
   */
  tolerance?: number | undefined;
  /**
   * Weight of a new, lower limit: the limit falls by at most `smoothing / 2` a window (a gradient
   * of 0.5 at most) — unless, with `queueing` given and saying so, the window is more than twice
   * as slow as tolerance allows: that halves it at once. @default 0.2
   */
  smoothing?: number | undefined;
  /**
   * The shortest window, in milliseconds. A window also lasts at least twice the baseline
   * latency (a change of the limit must show in it) and holds at least `windowSamples` samples.
   * In slow start from a limit of 4, a window is read from the requests that began in it, once
   * twice their mean latency has passed (at least twice the baseline, and half of this).
   * @default 100
   */
  windowMs?: number | undefined;
  /** The fewest completed requests a window needs before it is read. @default 10 */
  windowSamples?: number | undefined;
  /**
   * Whether work queues in this process now. The guard gives one where its Host reads the
   * process's CPU time: the process used at least 70 % of a core since the last reading, or its
   * load monitor is busy. A window slower than tolerance while the process has CPU to spare is
   * not this process queueing work — the work waits (an upstream, a long poll, a mix of fast and
   * slow routes) — and the limit grows as in a window within tolerance instead of shrinking.
   * Without it every slower window counts as queueing here.
   */
  queueing?: (() => boolean) | undefined;
  /**
   * Whether the process is mostly idle now (the guard's: under half the CPU it may use): a
   * request whose wait bound comes while the limit is full is then admitted, the limit growing
   * to hold every request in flight and waiting (lent: see `stalled`; never past `maxLimit`) —
   * the work holding the permits waits (long polls), and refusing would turn away work the
   * process has room for. Asked when a request starts to wait, and when its wait bound comes;
   * with no wait (`shedWaitMs` 0), when a request finds the limit full: it is then admitted
   * over the limit (never past `maxLimit`, never a sample), the limit unchanged.
   */
  idle?: (() => boolean) | undefined;
}

/** A concurrency limit that follows handler latency. Give it to `createConcurrencyLimit({ limit })`. */
export interface AdaptiveLimit {
  /** The current limit (an integer in [minLimit, maxLimit]). */
  readonly limit: number;
  /** The no-queue latency it compares against, in ms (undefined before the first window). */
  readonly baselineMs: number | undefined;
  readonly minLimit: number;
  readonly maxLimit: number;
  /**
   * While the limit is still in slow start: when it last doubled (the first sample's time
   * before any window closed); -Infinity once slow start ended. Requests that wait in the
   * meantime wait for the limit to find its level, not in a standing queue: the concurrency
   * limit counts a waiter's standing time from here, and admits a waiter whose wait bound
   * comes meanwhile over the limit. Optional for limits of your own.
   */
  readonly rampedAt?: number;
  /**
   * One request that completed normally: its latency from permit to settle (the guard dates a
   * permit at the request's arrival, so a wait for a later turn at the load gate before it —
   * queueing in this process too — counts: dated when the path went on, Node's I/O-bound storm
   * lost 2–3 % of its goodput and read a p99 of 96–144 ms in some runs), the permits in
   * use when it completed, and the time now (the window's clock). `held`: every permit held,
   * those admitted over the limit too (what `stalled(atLeast)` lent must still cover). `long`:
   * how many of the `inFlight` permits were taken before the current window began (see
   * `windows`) and are still held: work that gives no sample for a window or more (long polls).
   * `kind`: what kind of request it was (the guard gives its URL path): each kind's latency is
   * compared with that kind's own no-queue latency, so that a mix of fast and slow routes does
   * not read as queueing (see `close`). Without it, with the window's baseline.
   */
  sample(latencyMs: number, inFlight: number, now: number, held?: number, long?: number, kind?: string): void;
  /**
   * How many windows have closed: the concurrency limit tells the permits taken before the
   * current window began from the rest by it, and reports them as `sample`'s `long`. The limit
   * grows only as far as work that completes used it; where long work filled it, the growth is
   * lent (see `stalled`). Optional for limits of your own.
   */
  readonly windows?: number;
  /**
   * Every permit was held for a whole wait bound and none came back while requests waited:
   * the work in flight is long (long polls), not queued behind itself, and there is no
   * sample to learn from. Grows the limit by the queue allowance, from `atLeast` when that is
   * higher (never past maxLimit): the concurrency limit gives it while the process is mostly
   * idle, to hold every request in flight and waiting. What `atLeast` added is taken back as
   * the permits held fall (read at each sample: room is kept for those held within the last
   * `windowMs` or two, long polls come back at once), and at the first window in which work
   * queues, all but the permits that window held on average (the gradient applies from there).
   * Limits of your own may ignore it.
   */
  stalled(atLeast?: number): void;
  /**
   * The `queueing` option, when given: once an overload is over, the concurrency limit lets
   * requests held beside free permits take them, instead of refusing them, while it says no.
   * Optional for limits of your own.
   */
  readonly queueing?: (() => boolean) | undefined;
  /**
   * What `stalled(atLeast)` and long work lent now (0: nothing). The concurrency limit calls
   * `quiet` while it is over 0. Optional for limits of your own.
   */
  readonly lent?: number;
  /**
   * The permits `held` now, read without a sample while something is lent (the concurrency
   * limit tells it as a permit is taken, and as one is given back unsampled): as at a sample,
   * room is kept for the most held within the last `windowMs` or two, and what is lent beyond
   * goes back. Without it, the loan kept for long polls' return after the last of them was
   * answered stayed until the next sample (a storm after a quiet spell was admitted whole at
   * the raised limit), and polls that ended unsampled (their clients gave up) counted as gone
   * a window later though they were held a millisecond before. Optional for limits of your own.
   */
  quiet?(now: number, held: number): void;
  /** The `idle` option, when given (see the concurrency limit's wait bound). Optional for limits of your own. */
  readonly idle?: (() => boolean) | undefined;
}

/** The concurrency and latency of the window where the latency first went over tolerance. */
interface _Pressure {
  /** Mean permits in use over that window (what produced its latency; the limit may have moved). */
  readonly inFlight: number;
  readonly latencyMs: number;
  /** Windows in a row at half that limit or less whose latency did not fall with it. */
  unmoved: number;
}

/** The longest a window may last, in `windowMs` (1 s by default): see the window span. */
const MAX_SPAN_WINDOWS = 10;
/**
 * A window whose last sample is this many windows old (traffic stopped before it had its
 * samples) is begun again at its next sample: what it held is from before an idle spell.
 */
const STALE_WINDOWS = 600;

/** Every option of {@linkcode AdaptiveLimitOptions}: any other key is refused (_validate.ts `_onlyKnown`). */
export const _ADAPTIVE_LIMIT_KEYS: _KeyList<AdaptiveLimitOptions> = { initialLimit: true, minLimit: true, maxLimit: true, tolerance: true, smoothing: true, windowMs: true, windowSamples: true, queueing: true, idle: true };

/**
 * Creates an adaptive concurrency limit: the guard's default (`concurrencyLimit` left out).
 *
 * @example The limit grows while latency stays at its baseline, and shrinks when it queues
 * ```ts
 * import { createAdaptiveLimit } from "serve-hygiene";
 * const adaptive = createAdaptiveLimit({ initialLimit: 10, windowSamples: 1, windowMs: 100 });
 * let now = 0;
 * for (let i = 0; i < 3; i++) adaptive.sample(20, adaptive.limit, (now += 100));
 * console.assert(adaptive.limit > 10);
 * const grown = adaptive.limit;
 * for (let i = 0; i < 5; i++) adaptive.sample(80, adaptive.limit, (now += 200));
 * console.assert(adaptive.limit < grown);
 * ```
 */
export function createAdaptiveLimit(options?: AdaptiveLimitOptions): AdaptiveLimit {
  const what = "create adaptive limit";
  const o = _options(what, options, _ADAPTIVE_LIMIT_KEYS);
  const minLimit = _positiveInt(what, "minLimit", _given(o.minLimit, 1));
  const maxLimit = _positiveInt(what, "maxLimit", _given(o.maxLimit, Math.max(1000, minLimit)));
  if (maxLimit < minLimit) _fail(what, "maxLimit", `at least "minLimit" (${minLimit})`, maxLimit);
  const initialLimit = _positiveInt(what, "initialLimit", _given(o.initialLimit, minLimit));
  if (initialLimit < minLimit || initialLimit > maxLimit) _fail(what, "initialLimit", `within [${minLimit}, ${maxLimit}]`, initialLimit);
  const tolerance = _given(o.tolerance, 1.5);
  if (typeof tolerance !== "number" || !(tolerance >= 1 && tolerance < Infinity)) _fail(what, "tolerance", "a finite number of at least 1", tolerance);
  const smoothing = _given(o.smoothing, 0.2);
  if (typeof smoothing !== "number" || !(smoothing > 0 && smoothing <= 1)) _fail(what, "smoothing", "a number in (0, 1]", smoothing);
  const windowMs = _durationMs(what, "windowMs", _given(o.windowMs, 100));
  const windowSamples = _positiveInt(what, "windowSamples", _given(o.windowSamples, 10));
  const queueing = o.queueing;
  if (queueing !== undefined && typeof queueing !== "function") _fail(what, "queueing", "a function", queueing);
  const idle = o.idle;
  if (idle !== undefined && typeof idle !== "function") _fail(what, "idle", "a function", idle);

  let estimate = initialLimit; // fractional; `limit` is its integer part
  /**
   * What `stalled(atLeast)` raised the estimate by to hold requests that wait (long polls beside
   * an idle core), taken back once they have gone or work queues: kept, a CPU storm after a burst
   * of long polls met a limit of ~330 that shrank 10 % a window (admitted p99 0.9-3.3 s on Node
   * in its first 6 s, against 0.35-0.5 s with the limit before the polls). When work queues, all
   * but the permits the window held on average goes back, and the limit halves from there while
   * the window is over twice tolerance (see `close`).
   */
  let lent = 0;
  let limit = initialLimit;
  /** The window's no-queue latency (_baseline.ts; `base` undefined before the first window). */
  const baseline: _Baseline = { base: undefined, anchor: undefined };
  let pressure: _Pressure | undefined;
  // Slow start (as TCP's): the limit doubles a window until the latency first goes over
  // tolerance, then grows by the queue allowance.
  let starting = true;
  let rampedAt = -Infinity;
  let windowStart: number | undefined;
  /** When the latest sample came (an idle spell since begins the window again). */
  let lastSampleAt = -Infinity;
  let sum = 0;
  let count = 0;
  /** In slow start's short windows: the samples of requests that began in the window. */
  let ownSum = 0;
  let ownCount = 0;
  let used = 0;
  /** The most permits in use in the window by work taken in it (not `long`). */
  let usedShort = 0;
  let inFlightSum = 0;
  let windows = 0;
  /** The `long` of the latest sample. */
  let longNow = 0;
  /**
   * The last window's learned growth, until the next window tells whether the work that used the
   * limit was long after all: permits taken in a window are not `long` before the next one, and
   * long polls taken as a doubling limit let them in looked like short work for a window each.
   */
  let provisional: { grew: number; usedShort: number; limit: number; long: number } | undefined;

  /** Kinds of request (see `sample`) and their baselines (_latency_kinds.ts). */
  const kinds = new _LatencyKinds();

  /** The most permits held in the current `windowMs` of samples, and in the one before (0: none then). */
  let heldMost = 0;
  let heldBefore = 0;
  let heldAt = -Infinity;

  // What was lent goes back as the requests it held leave: the limit keeps room only for the
  // permits held within the last windowMs or two, and its queue allowance beyond, above where it
  // would be without it (a CPU storm right after a burst of long polls met the raised limit and
  // admitted its whole first burst at once: admitted p99 0.8-1.6 s on Node). Not only for those
  // held now: long polls come back as soon as they are answered (given back at once, re-polls
  // found it full, and short requests beside them waited out their wait bound: Deno p99 517 ms).
  /** The limit: the estimate's integer part, within [minLimit, maxLimit]. */
  const clampLimit = () => {
    limit = Math.max(minLimit, Math.min(maxLimit, Math.floor(estimate)));
  };

  // Counts `holding` permits held now into the most held in the current windowMs (a new one
  // begins once it is over; the one before is kept if it ended under windowMs ago).
  const hold = (now: number, holding: number) => {
    if (now - heldAt >= windowMs) {
      heldBefore = now - heldAt < 2 * windowMs ? heldMost : 0;
      heldMost = 0;
      heldAt = now;
    }
    if (holding > heldMost) heldMost = holding;
  };

  const repay = (held: number) => {
    const base = estimate - lent;
    const still = Math.max(0, held + Math.sqrt(held) - base);
    if (still >= lent) return;
    // What is left within one queue allowance of the base is forgiven: nothing is learned while
    // anything is lent, and a remainder of a fraction of a permit would hold it there.
    const kept = still > Math.sqrt(Math.max(1, base)) ? still : 0;
    estimate -= lent - kept;
    lent = kept;
    clampLimit();
  };

  /** The window now closing rebased (each kind's baseline is then set to its mean in it). */
  let rebased = false;

  const close = (shortMs: number, inFlight: number, now: number, n: number, kn: number, kbase: number, own: boolean) => {
    if (provisional !== undefined) {
      // Those of the last window's permits still held now (at least: older ones may have left)
      // were long work: without them it would not have used half the limit, the growth is lent.
      const { grew, usedShort: wasUsed, limit: wasLimit, long: wasLong } = provisional;
      provisional = undefined;
      if ((wasUsed - (longNow - wasLong)) * 2 < wasLimit) lent += Math.max(0, Math.min(grew, estimate - lent - minLimit));
    }
    // A faster window lowers the baseline to its mean; while work held from before the window
    // gives no sample, only by the share of the window's permits taken in it (_baseline.ts).
    const short = Math.max(1, usedShort);
    const share = longNow === 0 ? 1 : short / (short + longNow);
    _follow(baseline, shortMs, share);
    const base = _divisor(baseline.base!);
    // With kinds: the window's latency over the no-queue latency of its mix (_latency_kinds.ts).
    const ratio = kn === 0 ? shortMs / base : (shortMs * n) / ((n - kn) * base + kbase);
    // Slower, but not queued here (CPU to spare): the work waits, and throttling it would only
    // refuse work the process has room for (a review: a 90 % fast / 10 % slow mix, long polls
    // and a slower upstream were refused at a few percent of a core).
    const within = ratio <= tolerance;
    if (within || (queueing !== undefined && !queueing())) {
      pressure = undefined;
      // Grow by the queue allowance (√limit: fast from small limits, gentle at large ones),
      // unsmoothed, and only when the limit was actually reached halfway. A slower window with
      // the loop on time grows it so too, and ends slow start as any slower window does: doubling
      // on, an asynchronous CPU storm (whose loop reads on time for a while) overshot.
      const doubling = starting && within;
      // Learned only while nothing is lent (stalled(atLeast)) and the work that is not long used
      // half the limit: growing from an estimate that includes the held requests kept the loan (a
      // review: 32 → 317 → 709 in slow start, still 709 after the polls had gone; 453 after it),
      // and long polls taken within a doubling limit doubled it up to maxLimit, where it stayed
      // after they had gone (a review: 128 → 256 → 512 → 1,000). Where long work filled the limit
      // and fills it still (so that requests may wait), it grows as much, lent: given back as that
      // work leaves.
      const learned = lent === 0 && usedShort * 2 >= limit;
      if (learned || (used >= limit && heldMost >= limit)) {
        const grown = Math.min(maxLimit, estimate + (doubling ? estimate : Math.sqrt(estimate)));
        if (!learned) lent += grown - estimate;
        else provisional = { grew: grown - estimate, usedShort, limit, long: longNow };
        estimate = grown;
        if (doubling) rampedAt = now;
      }
      if (!within) {
        starting = false;
        rampedAt = -Infinity;
      }
    } else {
      starting = false;
      rampedAt = -Infinity;
      // What is lent goes back, but for the permits the window held on average: the gradient
      // applies from the concurrency that produced this latency. Taken back whole, the limit
      // learned on a fast route that a slow one joined (~4, where the mix holds ~55) fell back
      // there at the first window the loan's own burst queued in (a real queue, ~100 ms), and the
      // cycle of wait bound, loan and takeback went on for 4-6 s on Node (a review's mix).
      estimate = Math.max(minLimit, estimate - lent, Math.min(estimate, inFlight));
      lent = 0;
      const gradient = Math.max(0.5, tolerance / ratio);
      let unmoved = 0;
      if (pressure === undefined) pressure = { inFlight, latencyMs: shortMs, unmoved: 0 };
      else if (inFlight <= Math.max(minLimit, pressure.inFlight / 2)) {
        // Half the concurrency, and the latency barely moved (two windows in a row): it is not
        // queueing here. Rebase.
        unmoved = pressure.unmoved = shortMs > pressure.latencyMs * 0.75 ? pressure.unmoved + 1 : 0;
        if (pressure.unmoved >= 2) {
          // And held work met from now on is measured from here (left at the lower level, the
          // next window at the new latency was lowered toward it again: a review).
          _rebase(baseline, shortMs);
          rebased = true;
          pressure = undefined;
        }
      }
      // Twice as slow as tolerance allows, or slower, with work queueing in this process (the
      // `queueing` reading said so: this branch): the queue is long and real, and the limit
      // halves, unsmoothed (Envoy's adaptive concurrency does so at every window), while halving
      // lowers the latency. Smoothed, a CPU storm that met a limit learned on 20 ms I/O work
      // (64-128, slow start still doubling) shrank it 10 % a window, and its admitted requests
      // waited seconds (Node p99 2.1-3.7 s). Not without a reading (a slower upstream then reads
      // as queueing too: halving, a review saw 1,000 → 15 for 256 clients of a 5× slower one,
      // 1,000 → 50 halving only while it lowered the latency), nor once half the concurrency
      // did not lower it.
      const weight = queueing !== undefined && ratio > 2 * tolerance && unmoved === 0 ? 1 : smoothing;
      estimate = Math.max(minLimit, estimate * (1 - weight) + estimate * gradient * weight);
    }
    if (!Number.isFinite(estimate)) estimate = limit; // never: a broken figure keeps the limit where it was
    clampLimit();
    kinds.close(rebased, share, own);
    rebased = false;
  };

  return {
    get limit() {
      return limit;
    },
    get baselineMs() {
      return baseline.base;
    },
    get rampedAt() {
      return rampedAt;
    },
    get windows() {
      return windows;
    },
    get lent() {
      return lent;
    },
    minLimit,
    maxLimit,
    queueing,
    idle,
    sample(latencyMs, inFlight, now, held, long, kind) {
      if (!(latencyMs >= 0 && latencyMs < Infinity)) return; // NaN, negative (a clock that went back), Infinity: not a sample
      hold(now, typeof held === "number" && held > inFlight ? held : inFlight);
      if (lent > 0) repay(Math.max(heldMost, heldBefore));
      if (windowStart !== undefined && now - lastSampleAt > STALE_WINDOWS * windowMs) {
        // Read with what comes after an idle spell, such samples judged a window of today's
        // work: a day later, nine 300 ms samples and one fresh 20 ms one read as 272 ms and
        // halved the limit (a review). The gap, not the window's age: at a few requests a
        // minute a window takes minutes to fill, and still closes.
        sum = count = ownSum = ownCount = inFlightSum = used = usedShort = 0;
        kinds.forget();
        windowStart = undefined;
      }
      lastSampleAt = now;
      if (windowStart === undefined) {
        windowStart = now;
        if (starting) rampedAt = now;
      }
      sum += latencyMs;
      count++;
      const k = typeof kind === "string" ? kinds.add(kind, latencyMs, windows) : undefined;
      if (inFlight > used) used = inFlight;
      longNow = typeof long === "number" && long > 0 ? Math.min(long, inFlight) : 0;
      if (inFlight - longNow > usedShort) usedShort = inFlight - longNow;
      inFlightSum += inFlight;
      let shortMs: number;
      let own = false;
      let n: number;
      let kn: number;
      let kbase: number;
      if (starting && limit >= 4 && baseline.base !== undefined) {
        // Slow start from a limit of 4 reads only the requests admitted under the window's
        // limit (the ones that began in it), once twice their mean latency has passed (at
        // least twice the baseline and windowMs / 2): 20 ms work reaches the 64
        // permits it needs at half of one core's capacity 400 ms after its first request
        // instead of 600 (a fresh process refused ~70 requests of such a burst at the wait
        // bounds). Read with all the window's requests, a doubling did not show until the next
        // window: under an I/O-bound storm the limit overshot to 256 and settled higher. The
        // windows at limits 1 and 2 keep windowMs: they give the baseline, and a short one,
        // taken while a fresh process accepts its first burst and runs cold code, read inflated
        // latency as the baseline and kept the limit above its level.
        if (now - latencyMs >= windowStart) {
          ownSum += latencyMs;
          ownCount++;
          if (k !== undefined) kinds.addOwn(k, latencyMs);
        }
        if (ownCount === 0 || now - windowStart < Math.min(Math.max(windowMs / 2, 2 * baseline.base, (2 * ownSum) / ownCount), MAX_SPAN_WINDOWS * windowMs)) return;
        shortMs = ownSum / ownCount;
        own = true;
        n = ownCount;
        kn = kinds.ownN;
        kbase = kinds.ownBase;
      } else {
        // Twice the baseline (a window holds requests admitted under its limit), at most
        // MAX_SPAN_WINDOWS windows: a baseline read across a freeze (a process paused while its
        // first window was open: seconds) is replaced by the next window's, not held for twice that.
        const span = Math.max(windowMs, baseline.base === undefined ? 0 : Math.min(2 * baseline.base, MAX_SPAN_WINDOWS * windowMs));
        // During slow start a window needs only time, not `windowSamples` (at a limit of 1 and
        // 20 ms a request, ten samples would take 200 ms a window while requests wait).
        if (count < (starting ? 1 : windowSamples) || now - windowStart < span) return;
        shortMs = sum / count;
        n = count;
        kn = kinds.n;
        kbase = kinds.base;
      }
      const meanInFlight = inFlightSum / count;
      sum = 0;
      count = 0;
      ownSum = 0;
      ownCount = 0;
      inFlightSum = 0;
      windowStart = now;
      kinds.read();
      close(shortMs, meanInFlight, now, n, kn, kbase, own);
      used = 0;
      usedShort = 0;
      windows++;
    },
    quiet(now, held) {
      // Not a figure (NaN, a string): nothing moves, as a sample of NaN latency is none.
      if (lent === 0 || !(typeof held === "number" && held >= 0) || !(now >= heldAt)) return;
      hold(now, held);
      repay(Math.max(heldMost, heldBefore));
    },
    stalled(atLeast) {
      const grown = Math.min(maxLimit, estimate + Math.sqrt(estimate));
      const from = typeof atLeast === "number" && atLeast > estimate ? Math.min(maxLimit, atLeast) : estimate;
      const raised = Math.min(maxLimit, from + Math.sqrt(from));
      lent += raised - grown;
      estimate = raised;
      clampLimit();
    },
  };
}
