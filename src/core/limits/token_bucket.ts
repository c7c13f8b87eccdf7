import type { Clock } from "../clock.ts";
import { systemClock } from "../clock.ts";
import type { EventSink } from "../events.ts";
import type { RateDecision, RateLimiter } from "./rate_limiter.ts";
import { _SINK } from "./rate_limiter.ts";
import { _PressuredTable } from "./_pressure.ts";
import { _fail, _options, _positiveInt, _given, type _KeyList } from "../_validate.ts";
import {
  _ADMIT,
  _ADMITTING,
  _ALLOWED,
  _badClock,
  _checkCost,
  _corrupt,
  _decision,
  _emitFault,
  _emitRateDeny,
  _label,
  _positiveFinite,
  type _Mode,
  _PEEK,
  _TAKE,
} from "./_rate.ts";
import type { RateStore } from "./rate_store.ts";
import { _sharedLimiter, type SharedLimiterOptions, type SharedRateLimiter } from "./shared_limiter.ts";

/** Options of {@linkcode createTokenBucketLimiter}. With `store`, see {@linkcode SharedLimiterOptions}. */
export interface TokenBucketLimiterOptions extends SharedLimiterOptions {
  /** Sustained rate: cost units one key earns per second. May be fractional (0.5 = one per 2 s). */
  ratePerSecond: number;
  /** Bucket size: cost units one key may spend at once after being idle. A positive integer. */
  burst: number;
  /**
   * The most keys held at once. At the cap, an unseen key first drops an idle key (bucket
   * full again; amortised O(1): a sweep cursor resumes where it stopped, a bounded step at a
   * time). If none is found, an address key is charged to its network's shared bucket (IPv6
   * /48, IPv4 /24; at most `maxKeys / 4` networks held), and any other key is denied
   * "table-full". An active key is never evicted to make room.
   * @default 4096
   */
  maxKeys?: number | undefined;
  /** Time source when a call does not pass `now`. @default systemClock */
  clock?: Clock | undefined;
  /** Class label for events ("ip", "auth"). @default undefined */
  name?: string | undefined;
  /** Receives deny events (from `take`) and fault events. @default undefined */
  onEvent?: EventSink | undefined;
}

/** A token-bucket rate limiter (GCRA) over a bounded key table. */
export interface TokenBucketLimiter extends RateLimiter {
  readonly ratePerSecond: number;
  readonly burst: number;
}

// One number of state per key, boxed so a hot key costs one map lookup (get, then write in place).
interface _Tat {
  tat: number;
}

// Float sums of emission intervals can land a hair past the exact time (1000 / 3 is not a
// binary fraction); a request that conforms in exact arithmetic must not be denied, nor a
// remaining unit lost, for that. One nanosecond of slack is far below any clock's meaning, but
// the rounding grows with the time values compared: a unit in the last place is 2.4e-4 ms at
// an epoch clock's 1.7e12 (and 2e-6 after 116 days of performance.now()), where 3 a second
// with a burst of 5 lost its fifth take. So the slack also covers 2^-46 of the time's size,
// ~100 such units (24 µs at 1.7e12); a power of two, so the Redis store's Lua (_scripts.ts)
// computes the same double. Never more than half the emission interval: at an epoch clock's
// size 24 µs passed the interval of a rate over ~40,000 a second, and a burst of 3 admitted 5
// at one instant (a review); half, not less, leaves room for the rounding a large burst's sums
// gather (a quarter lost a token of a burst of 100 at 30,000 a second). Past ~300,000 a second
// at an epoch-sized time (the Redis store's) the interval nears a double's precision there,
// and a large burst may be off by a few.
const SLACK_MS = 1e-6;
const _slack = (now: number, interval: number) => Math.min(SLACK_MS + Math.abs(now) * 2 ** -46, interval / 2);
/**
 * The longest burst × interval a bucket may have (~31.7 years): the Redis store writes its
 * expiry as an integer, and Lua prints a number from 1e14 on in exponent form, which Redis
 * refused (every take of a bucket refilling in 1e17 ms failed).
 */
const MAX_REFILL_MS = 1e12;

/** Every option of {@linkcode TokenBucketLimiterOptions}: any other key is refused (_validate.ts `_onlyKnown`). */
const TOKEN_BUCKET_LIMITER_KEYS: _KeyList<TokenBucketLimiterOptions> = { ratePerSecond: true, burst: true, maxKeys: true, clock: true, name: true, onEvent: true, store: true, failure: true, expectedInstances: true, localLimiter: true, maxDeniedKeys: true };

/**
 * Creates a token-bucket limiter using the generic cell rate algorithm: each key holds one
 * number, its theoretical arrival time (TAT). A request of cost `c` at `now` passes when
 * `max(TAT, now) + c·T − burst·T ≤ now` (T = 1000 / ratePerSecond ms), and moves the TAT
 * by `c·T`. A key whose TAT is at or before `now` is idle (its bucket is full) and may be
 * pruned: expiry is a comparison, with no timer and no background sweep. Under table
 * pressure unseen address keys share their network's bucket (IPv6 /48, IPv4 /24) instead of
 * being locked out, as {@linkcode createFixedWindowLimiter} describes; a shared bucket's
 * denials report "table-full".
 *
 * `retryAfterMs` is exact: the time until the request would conform. `resetMs` is the time
 * until the bucket is full. `windowMs` is `burst·T`, the time to refill an empty bucket.
 * A denied `take` counts nothing. A cost above `burst` throws a RangeError (it could never
 * pass).
 *
 * Fails closed: a non-finite clock reading, a corrupt entry or any internal error denies
 * with `retryAfterMs` = T (one emission interval), emits a fault event, and never throws.
 * A corrupt entry is replaced by an empty bucket.
 *
 * @example Five requests a second, bursts of ten
 * ```ts
 * import { createManualClock, createTokenBucketLimiter } from "serve-hygiene";
 * const clock = createManualClock();
 * const limiter = createTokenBucketLimiter({ ratePerSecond: 5, burst: 10, clock });
 * for (let i = 0; i < 10; i++) console.assert(limiter.take("k").allowed);
 * const denied = limiter.take("k");
 * console.assert(!denied.allowed && denied.retryAfterMs === 200);
 * clock.advance(200);
 * console.assert(limiter.take("k").allowed);
 * ```
 *
 * With a `store` each key's TAT lives there, shared by every instance using it (timed by
 * the store's clock), and the result is a {@linkcode SharedRateLimiter}: see
 * {@linkcode SharedLimiterOptions} for its local fast path and its failure behaviour.
 */
export function createTokenBucketLimiter(options: TokenBucketLimiterOptions & { store: RateStore }): SharedRateLimiter;
export function createTokenBucketLimiter(options: TokenBucketLimiterOptions & { store?: undefined }): TokenBucketLimiter;
export function createTokenBucketLimiter(options: TokenBucketLimiterOptions): TokenBucketLimiter | SharedRateLimiter;
export function createTokenBucketLimiter(options: TokenBucketLimiterOptions): TokenBucketLimiter | SharedRateLimiter {
  const what = "create token bucket limiter";
  const o = _options(what, options, TOKEN_BUCKET_LIMITER_KEYS);
  const ratePerSecond = _positiveFinite(what, "ratePerSecond", o.ratePerSecond);
  const burst = _positiveInt(what, "burst", o.burst);
  const maxKeys = _positiveInt(what, "maxKeys", _given(o.maxKeys, 4096));
  const clock = o.clock ?? systemClock;
  const name = _label(what, o.name);
  const sink = o.onEvent;
  const interval = 1000 / ratePerSecond;
  const tolerance = burst * interval;
  // A rate so small that the burst never refills (1e-307: Infinity ms) would deny every later take as broken.
  if (!(tolerance <= MAX_REFILL_MS)) {
    throw new RangeError(`Cannot ${what} as "burst" × 1000 ÷ "ratePerSecond" (the ms the burst takes to refill) must be at most ${MAX_REFILL_MS}: current values are ${burst} and ${ratePerSecond}`);
  }
  if (o.store !== undefined) {
    return _sharedLimiter({
      what,
      algorithm: "token-bucket",
      name,
      limit: burst,
      windowMs: tolerance,
      intervalMs: interval,
      maxKeys,
      clock,
      failClosedRetryAfterMs: interval,
      onEvent: sink,
      insurance: (n) =>
        createTokenBucketLimiter({ ratePerSecond: ratePerSecond / n, burst: Math.max(1, Math.floor(burst / n)), maxKeys, clock, name, onEvent: sink }),
    }, o);
  }
  const tables = new _PressuredTable<_Tat>(maxKeys, (e) => e.tat);
  const table = tables.keys;

  const remainingAt = (now: number, tat: number): number => {
    const r = Math.floor((now + tolerance - tat + _slack(now, interval)) / interval);
    return r > 0 ? r : 0;
  };

  const fault = (key: string, now: number, error: unknown, report: boolean): RateDecision => {
    try {
      if (now - now === 0 && table.get(key) !== undefined) table.set(key, { tat: now + tolerance });
    } catch {
      // The repair is best effort; the denial below stands either way.
    }
    _emitFault(sink, error);
    const decision = _decision(false, interval, 0, burst, tolerance, tolerance, "limiter-error");
    if (report) _emitRateDeny(sink, decision, name);
    return decision;
  };

  const decide = (key: string, cost: number, at: number | undefined, mode: _Mode): RateDecision => {
    const commit = mode !== _PEEK;
    const report = mode === _TAKE;
    if (cost !== 1) _checkCost(commit ? "take from token bucket limiter" : "peek at token bucket limiter", cost, burst);
    let now = NaN;
    try {
      now = at === undefined ? clock.now() : at;
      if (now - now !== 0) throw _badClock(now);
      let entry = table.get(key);
      let pooled = false;
      let place;
      if (entry === undefined) {
        place = tables.place(key, now);
        if (place === undefined) {
          const wait = tables.waitMs(now, tolerance);
          const decision = _decision(false, wait, 0, burst, wait, tolerance, "table-full");
          if (report) _emitRateDeny(sink, decision, name);
          return decision;
        }
        entry = place.entry;
        pooled = place.pooled;
      }
      let tat = now;
      if (entry !== undefined) {
        const stored = entry.tat;
        if (!(stored - stored === 0)) throw _corrupt("token bucket");
        if (stored > now) tat = stored;
      }
      const next = tat + cost * interval;
      const allowAt = next - tolerance;
      if (now + _slack(now, interval) < allowAt) {
        const reason = pooled ? "table-full" : "over-limit";
        const decision = _decision(false, allowAt - now, remainingAt(now, tat), burst, tat - now, tolerance, reason);
        if (report) _emitRateDeny(sink, decision, name);
        return decision;
      }
      if (commit) {
        if (entry !== undefined) entry.tat = next;
        else place!.table.set(place!.key, { tat: next });
      }
      return mode === _ADMITTING ? _ALLOWED : _decision(true, 0, remainingAt(now, next), burst, next - now, tolerance, undefined);
    } catch (error) {
      return fault(key, now, error, report);
    }
  };

  return {
    name,
    ratePerSecond,
    burst,
    limit: burst,
    windowMs: tolerance,
    size: table.gauge,
    clock,
    failClosedRetryAfterMs: interval,
    take: (key, cost = 1, now) => decide(key, cost, now, _TAKE),
    peek: (key, cost = 1, now) => decide(key, cost, now, _PEEK),
    [_ADMIT]: (key: string, now: number) => decide(key, 1, now, _ADMITTING),
    [_SINK]: sink,
  } as TokenBucketLimiter;
}
