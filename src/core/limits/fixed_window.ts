import type { Clock } from "../clock.ts";
import { systemClock } from "../clock.ts";
import type { EventSink } from "../events.ts";
import type { RateDecision, RateLimiter } from "./rate_limiter.ts";
import { _SINK } from "./rate_limiter.ts";
import { _PressuredTable } from "./_pressure.ts";
import { _durationMs, _options, _positiveInt, _given, type _KeyList } from "../_validate.ts";
import { _ADMIT, _ADMITTING, _ALLOWED, _badClock, _checkCost, _corrupt, _decision, _emitFault, _emitRateDeny, _label, type _Mode, _PEEK, _TAKE } from "./_rate.ts";
import type { RateStore } from "./rate_store.ts";
import { _sharedLimiter, type SharedLimiterOptions, type SharedRateLimiter } from "./shared_limiter.ts";

/** Options of {@linkcode createFixedWindowLimiter}. With `store`, see {@linkcode SharedLimiterOptions}. */
export interface FixedWindowLimiterOptions extends SharedLimiterOptions {
  /** Cost units (requests) one key may spend per window. @default 600 */
  limit?: number | undefined;
  /** The window, in milliseconds. @default 60_000 */
  windowMs?: number | undefined;
  /**
   * The most keys held at once. At the cap, an unseen key first drops a window that has
   * ended (amortised O(1): a sweep cursor resumes where it stopped, a bounded step at a
   * time). If none is found, an address key is charged to its network's shared window (IPv6
   * /48, IPv4 /24; at most `maxKeys / 4` networks held), and any other key is denied
   * "table-full". An active window is never evicted to make room (that would reset an
   * abuser's count).
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

/** A fixed-window rate limiter over a bounded key table. */
export interface FixedWindowLimiter extends RateLimiter {}

interface _Window {
  start: number;
  count: number;
}

/** Every option of {@linkcode FixedWindowLimiterOptions}: any other key is refused (_validate.ts `_onlyKnown`). */
const FIXED_WINDOW_LIMITER_KEYS: _KeyList<FixedWindowLimiterOptions> = { limit: true, windowMs: true, maxKeys: true, clock: true, name: true, onEvent: true, store: true, failure: true, expectedInstances: true, localLimiter: true, maxDeniedKeys: true };

/**
 * Creates a fixed-window limiter: each key may spend `limit` cost units per `windowMs`.
 *
 * Windows are aligned per key: a key's window starts at its first request after its previous
 * window ended, so resets are spread over time instead of every client retrying at one
 * global edge. `retryAfterMs` and `resetMs` are the time to the key's window edge.
 *
 * Under table pressure (every held window live), unseen keys aggregate instead of locking
 * out every new client: an IPv6 key is charged to its /48's shared window, an IPv4 key to its
 * /24's, each with the same `limit` per `windowMs`. A flood of distinct /64s from one /48
 * thus shares one budget, while a client of another network is served; denials of a shared
 * window report "table-full". A key that is not an address is denied "table-full", with
 * `retryAfterMs` = the time until the earliest stored window may end (a lower bound). Making
 * room costs amortised O(1) per unseen key, never a scan of the table (measured on a churning
 * flood at 4,096 keys: bench/limiters.bench.ts). A denied `take` counts nothing. A cost
 * above `limit` throws a RangeError (it could never pass).
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
 *
 * With a `store` the budgets live there, shared by every instance using it (each window
 * timed by the store's clock), and the result is a {@linkcode SharedRateLimiter}: see
 * {@linkcode SharedLimiterOptions} for its local fast path and its failure behaviour.
 */
export function createFixedWindowLimiter(options: FixedWindowLimiterOptions & { store: RateStore }): SharedRateLimiter;
export function createFixedWindowLimiter(options?: FixedWindowLimiterOptions & { store?: undefined }): FixedWindowLimiter;
export function createFixedWindowLimiter(options?: FixedWindowLimiterOptions): FixedWindowLimiter | SharedRateLimiter;
export function createFixedWindowLimiter(options?: FixedWindowLimiterOptions): FixedWindowLimiter | SharedRateLimiter {
  const what = "create fixed window limiter";
  const o = _options(what, options, FIXED_WINDOW_LIMITER_KEYS);
  const limit = _positiveInt(what, "limit", _given(o.limit, 600));
  const windowMs = _durationMs(what, "windowMs", _given(o.windowMs, 60_000));
  const maxKeys = _positiveInt(what, "maxKeys", _given(o.maxKeys, 4096));
  const clock = o.clock ?? systemClock;
  const name = _label(what, o.name);
  const sink = o.onEvent;
  if (o.store !== undefined) {
    return _sharedLimiter({
      what,
      algorithm: "fixed-window",
      name,
      limit,
      windowMs,
      intervalMs: windowMs,
      maxKeys,
      clock,
      failClosedRetryAfterMs: windowMs,
      onEvent: sink,
      insurance: (n) => createFixedWindowLimiter({ limit: Math.max(1, Math.floor(limit / n)), windowMs, maxKeys, clock, name, onEvent: sink }),
    }, o);
  }
  const tables = new _PressuredTable<_Window>(maxKeys, (w) => w.start + windowMs);
  const table = tables.keys;

  const fault = (key: string, now: number, error: unknown, report: boolean): RateDecision => {
    try {
      if (now - now === 0 && table.get(key) !== undefined) table.set(key, { start: now, count: limit });
    } catch {
      // The repair is best effort; the denial below stands either way.
    }
    _emitFault(sink, error);
    const decision = _decision(false, windowMs, 0, limit, windowMs, windowMs, "limiter-error");
    if (report) _emitRateDeny(sink, decision, name);
    return decision;
  };

  const deny = (decision: RateDecision, report: boolean): RateDecision => {
    if (report) _emitRateDeny(sink, decision, name);
    return decision;
  };

  // A pass: a decision, or — admitting — the shared one (nothing of it is read).
  const allow = (mode: _Mode, remaining: number, resetMs: number): RateDecision =>
    mode === _ADMITTING ? _ALLOWED : _decision(true, 0, remaining, limit, resetMs, windowMs, undefined);

  const decide = (key: string, cost: number, at: number | undefined, mode: _Mode): RateDecision => {
    const commit = mode !== _PEEK;
    const report = mode === _TAKE;
    if (cost !== 1) _checkCost(commit ? "take from fixed window limiter" : "peek at fixed window limiter", cost, limit);
    let now = NaN;
    try {
      now = at === undefined ? clock.now() : at;
      if (now - now !== 0) throw _badClock(now);
      let w = table.get(key);
      let pooled = false;
      let place;
      if (w === undefined) {
        place = tables.place(key, now);
        if (place === undefined) {
          const wait = tables.waitMs(now, windowMs);
          return deny(_decision(false, wait, 0, limit, wait, windowMs, "table-full"), report);
        }
        w = place.entry;
        pooled = place.pooled;
      }
      if (w !== undefined) {
        const start = w.start;
        const count = w.count;
        if (!(count >= 0 && start - start === 0)) throw _corrupt("fixed window");
        const elapsed = now - start;
        if (elapsed < windowMs) {
          // A caller's `now` may be a little older than the window's start: never report more than a window.
          const resetMs = elapsed > 0 ? windowMs - elapsed : windowMs;
          if (count + cost > limit) {
            const reason = pooled ? "table-full" : "over-limit";
            return deny(_decision(false, resetMs, limit - count, limit, resetMs, windowMs, reason), report);
          }
          if (commit) w.count = count + cost;
          return allow(mode, limit - count - cost, resetMs);
        }
        if (commit) {
          w.start = now;
          w.count = cost;
        }
        return allow(mode, limit - cost, windowMs);
      }
      if (commit) place!.table.set(place!.key, { start: now, count: cost });
      return allow(mode, limit - cost, windowMs);
    } catch (error) {
      return fault(key, now, error, report);
    }
  };

  return {
    name,
    limit,
    windowMs,
    size: table.gauge,
    clock,
    failClosedRetryAfterMs: windowMs,
    take: (key, cost = 1, now) => decide(key, cost, now, _TAKE),
    peek: (key, cost = 1, now) => decide(key, cost, now, _PEEK),
    [_ADMIT]: (key: string, now: number) => decide(key, 1, now, _ADMITTING),
    [_SINK]: sink,
  } as FixedWindowLimiter;
}
