import type { Clock } from "./clock.ts";
import { systemClock } from "./clock.ts";
import type { EventSink } from "./events.ts";
import type { RateDecision, RateLimiter } from "./rate_limiter.ts";
import { createSizeGauge } from "./size_gauge.ts";
import { _options, _positiveInt, _given } from "./_validate.ts";
import {
  _badClock,
  _checkCost,
  _corrupt,
  _decision,
  _emitFault,
  _emitRateDeny,
  _label,
  _positiveFinite,
} from "./_rate.ts";

/** Options of {@linkcode createTokenBucketLimiter}. */
export interface TokenBucketLimiterOptions {
  /** Sustained rate: cost units one key earns per second. May be fractional (0.5 = one per 2 s). */
  ratePerSecond: number;
  /** Bucket size: cost units one key may spend at once after being idle. A positive integer. */
  burst: number;
  /**
   * The most keys held at once. At the cap, an unseen key first triggers one prune of every
   * idle key (bucket full again); it is denied only if the table is still full. An active
   * key is never evicted to make room.
   * @default 4096
   */
  maxKeys?: number;
  /** Time source when a call does not pass `now`. @default systemClock */
  clock?: Clock;
  /** Class label for events ("ip", "auth"). @default undefined */
  name?: string;
  /** Receives deny events (from `take`) and fault events. @default undefined */
  onEvent?: EventSink;
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
// remaining unit lost, for that. One nanosecond of slack is far below any clock's meaning.
const SLACK_MS = 1e-6;

/**
 * Creates a token-bucket limiter using the generic cell rate algorithm: each key holds one
 * number, its theoretical arrival time (TAT). A request of cost `c` at `now` passes when
 * `max(TAT, now) + c·T − burst·T ≤ now` (T = 1000 / ratePerSecond ms), and moves the TAT
 * by `c·T`. A key whose TAT is at or before `now` is idle (its bucket is full) and may be
 * pruned: expiry is a comparison, with no timer and no background sweep.
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
 */
export function createTokenBucketLimiter(options: TokenBucketLimiterOptions): TokenBucketLimiter {
  const what = "create token bucket limiter";
  const o = _options(what, options);
  const ratePerSecond = _positiveFinite(what, "ratePerSecond", o.ratePerSecond);
  const burst = _positiveInt(what, "burst", o.burst);
  const maxKeys = _positiveInt(what, "maxKeys", _given(o.maxKeys, 4096));
  const clock = o.clock ?? systemClock;
  const name = _label(what, o.name);
  const sink = o.onEvent;
  const interval = 1000 / ratePerSecond;
  const tolerance = burst * interval;
  const table = new Map<string, _Tat>();
  const size = createSizeGauge(maxKeys);
  // A lower bound on every stored TAT: inserts lower it, TATs only move later in place.
  // No key can be idle before this time.
  let earliestIdle = Infinity;

  /** The one prune an unseen key at the cap may trigger; true when there is room after it. */
  const makeRoom = (now: number): boolean => {
    if (now >= earliestIdle) {
      let earliest = Infinity;
      for (const [key, entry] of table) {
        const tat = entry.tat;
        if (!(now < tat)) table.delete(key);
        else if (tat < earliest) earliest = tat;
      }
      earliestIdle = earliest;
      size.set(table.size);
    }
    return table.size < maxKeys;
  };

  const remainingAt = (now: number, tat: number): number => {
    const r = Math.floor((now + tolerance - tat + SLACK_MS) / interval);
    return r > 0 ? r : 0;
  };

  const fault = (key: string, now: number, error: unknown, commit: boolean): RateDecision => {
    try {
      if (now - now === 0 && table.has(key)) table.set(key, { tat: now + tolerance });
    } catch {
      // The repair is best effort; the denial below stands either way.
    }
    _emitFault(sink, error);
    const decision = _decision(false, interval, 0, burst, tolerance, tolerance, "limiter-error");
    if (commit) _emitRateDeny(sink, decision, name);
    return decision;
  };

  const decide = (key: string, cost: number, at: number | undefined, commit: boolean): RateDecision => {
    if (cost !== 1) _checkCost(commit ? "take from token bucket limiter" : "peek at token bucket limiter", cost, burst);
    let now = NaN;
    try {
      now = at === undefined ? clock.now() : at;
      if (now - now !== 0) throw _badClock(now);
      const entry = table.get(key);
      let tat = now;
      if (entry !== undefined) {
        const stored = entry.tat;
        if (!(stored - stored === 0)) throw _corrupt("token bucket");
        if (stored > now) tat = stored;
      } else if (table.size >= maxKeys && !makeRoom(now)) {
        const wait = earliestIdle - now;
        const decision = _decision(false, wait, 0, burst, wait, tolerance, "table-full");
        if (commit) _emitRateDeny(sink, decision, name);
        return decision;
      }
      const next = tat + cost * interval;
      const allowAt = next - tolerance;
      if (now + SLACK_MS < allowAt) {
        const decision = _decision(false, allowAt - now, remainingAt(now, tat), burst, tat - now, tolerance, "over-limit");
        if (commit) _emitRateDeny(sink, decision, name);
        return decision;
      }
      if (commit) {
        if (entry !== undefined) entry.tat = next;
        else {
          table.set(key, { tat: next });
          size.set(table.size);
          if (next < earliestIdle) earliestIdle = next;
        }
      }
      return _decision(true, 0, remainingAt(now, next), burst, next - now, tolerance, undefined);
    } catch (error) {
      return fault(key, now, error, commit);
    }
  };

  return {
    name,
    ratePerSecond,
    burst,
    limit: burst,
    windowMs: tolerance,
    size: size.gauge,
    clock,
    failClosedRetryAfterMs: interval,
    take: (key, cost = 1, now) => decide(key, cost, now, true),
    peek: (key, cost = 1, now) => decide(key, cost, now, false),
  };
}
