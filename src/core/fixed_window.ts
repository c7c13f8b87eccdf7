import type { Clock } from "./clock.ts";
import { systemClock } from "./clock.ts";
import type { EventSink } from "./events.ts";
import type { RateDecision, RateLimiter } from "./rate_limiter.ts";
import { createSizeGauge } from "./size_gauge.ts";
import { _durationMs, _options, _positiveInt, _given } from "./_validate.ts";
import { _badClock, _checkCost, _corrupt, _decision, _emitFault, _emitRateDeny, _label } from "./_rate.ts";

/** Options of {@linkcode createFixedWindowLimiter}. */
export interface FixedWindowLimiterOptions {
  /** Cost units (requests) one key may spend per window. @default 600 */
  limit?: number;
  /** The window, in milliseconds. @default 60_000 */
  windowMs?: number;
  /**
   * The most keys held at once. At the cap, an unseen key first triggers one prune of every
   * window that has ended; it is denied only if the table is still full. An active window is
   * never evicted to make room (that would reset an abuser's count).
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

/** A fixed-window rate limiter over a bounded key table. */
export interface FixedWindowLimiter extends RateLimiter {}

interface _Window {
  start: number;
  count: number;
}

/**
 * Creates a fixed-window limiter: each key may spend `limit` cost units per `windowMs`.
 *
 * Windows are aligned per key: a key's window starts at its first request after its previous
 * window ended, so resets are spread over time instead of every client retrying at one
 * global edge. `retryAfterMs` and `resetMs` are the time to the key's window edge.
 *
 * A denied unseen key at the cap gets `retryAfterMs` = the time until the earliest stored
 * window ends (a lower bound: the limiter tracks it without scanning, and only scans when
 * that time has come, so a flood of unseen keys against a table of live windows costs O(1)
 * per request). The cost to know: when stored windows keep ending one by one while unseen
 * keys keep arriving (a churning flood at the cap), each unseen key may scan the table and
 * free few slots — measured ~15 µs per such key at 4,096 keys. A denied `take`
 * counts nothing. A cost above `limit` throws a RangeError (it could never pass).
 *
 * Fails closed: a non-finite clock reading, a corrupt entry or any internal error denies
 * with `retryAfterMs` = `windowMs`, emits a fault event, and never throws. A corrupt entry is
 * replaced by a full window, so the key recovers when that window ends.
 *
 * @example Ten requests a second per client
 * ```ts
 * import { createFixedWindowLimiter, createManualClock } from "serve-hygiene";
 * const clock = createManualClock();
 * const limiter = createFixedWindowLimiter({ limit: 2, windowMs: 1000, clock });
 * console.assert(limiter.take("10.0.0.1").allowed);
 * console.assert(limiter.take("10.0.0.1").remaining === 0);
 * const denied = limiter.take("10.0.0.1");
 * console.assert(!denied.allowed && denied.retryAfterMs === 1000);
 * clock.advance(1000);
 * console.assert(limiter.take("10.0.0.1").allowed);
 * ```
 */
export function createFixedWindowLimiter(options?: FixedWindowLimiterOptions): FixedWindowLimiter {
  const what = "create fixed window limiter";
  const o = _options(what, options);
  const limit = _positiveInt(what, "limit", _given(o.limit, 600));
  const windowMs = _durationMs(what, "windowMs", _given(o.windowMs, 60_000));
  const maxKeys = _positiveInt(what, "maxKeys", _given(o.maxKeys, 4096));
  const clock = o.clock ?? systemClock;
  const name = _label(what, o.name);
  const sink = o.onEvent;
  const table = new Map<string, _Window>();
  const size = createSizeGauge(maxKeys);
  // A lower bound on every stored window's end: new windows end later than it or lower it,
  // restarted windows only move later. No window can be pruned before this time.
  let earliestEdge = Infinity;

  /** The one prune an unseen key at the cap may trigger; true when there is room after it. */
  const makeRoom = (now: number): boolean => {
    if (now >= earliestEdge) {
      let earliest = Infinity;
      for (const [key, w] of table) {
        const edge = w.start + windowMs;
        if (!(now < edge)) table.delete(key);
        else if (edge < earliest) earliest = edge;
      }
      earliestEdge = earliest;
      size.set(table.size);
    }
    return table.size < maxKeys;
  };

  const fault = (key: string, now: number, error: unknown, commit: boolean): RateDecision => {
    try {
      if (now - now === 0 && table.has(key)) table.set(key, { start: now, count: limit });
    } catch {
      // The repair is best effort; the denial below stands either way.
    }
    _emitFault(sink, error);
    const decision = _decision(false, windowMs, 0, limit, windowMs, windowMs, "limiter-error");
    if (commit) _emitRateDeny(sink, decision, name);
    return decision;
  };

  const deny = (decision: RateDecision, commit: boolean): RateDecision => {
    if (commit) _emitRateDeny(sink, decision, name);
    return decision;
  };

  const decide = (key: string, cost: number, at: number | undefined, commit: boolean): RateDecision => {
    if (cost !== 1) _checkCost(commit ? "take from fixed window limiter" : "peek at fixed window limiter", cost, limit);
    let now = NaN;
    try {
      now = at === undefined ? clock.now() : at;
      if (now - now !== 0) throw _badClock(now);
      const w = table.get(key);
      if (w !== undefined) {
        const start = w.start;
        const count = w.count;
        if (!(count >= 0 && start - start === 0)) throw _corrupt("fixed window");
        const elapsed = now - start;
        if (elapsed < windowMs) {
          // A caller's `now` may be a little older than the window's start: never report more than a window.
          const resetMs = elapsed > 0 ? windowMs - elapsed : windowMs;
          if (count + cost > limit) {
            return deny(_decision(false, resetMs, limit - count, limit, resetMs, windowMs, "over-limit"), commit);
          }
          if (commit) w.count = count + cost;
          return _decision(true, 0, limit - count - cost, limit, resetMs, windowMs, undefined);
        }
        if (commit) {
          w.start = now;
          w.count = cost;
        }
        return _decision(true, 0, limit - cost, limit, windowMs, windowMs, undefined);
      }
      if (table.size >= maxKeys && !makeRoom(now)) {
        const wait = earliestEdge - now;
        return deny(_decision(false, wait, 0, limit, wait, windowMs, "table-full"), commit);
      }
      if (commit) {
        table.set(key, { start: now, count: cost });
        size.set(table.size);
        if (now + windowMs < earliestEdge) earliestEdge = now + windowMs;
      }
      return _decision(true, 0, limit - cost, limit, windowMs, windowMs, undefined);
    } catch (error) {
      return fault(key, now, error, commit);
    }
  };

  return {
    name,
    limit,
    windowMs,
    size: size.gauge,
    clock,
    failClosedRetryAfterMs: windowMs,
    take: (key, cost = 1, now) => decide(key, cost, now, true),
    peek: (key, cost = 1, now) => decide(key, cost, now, false),
  };
}
