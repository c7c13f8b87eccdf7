// A keyed limiter whose budgets live in a shared store (issue 15): what
// `createFixedWindowLimiter({ store })` and `createTokenBucketLimiter({ store })` return.
// The in-memory limiters stay as they are; this is a separate object, so their synchronous
// path pays nothing for the option. The take itself (denied-key cache, local pre-check,
// store call, failure and fallback) is in _shared_take.ts, shared with the scoped limiter.
import type { Clock } from "../clock.ts";
import type { EventSink } from "../events.ts";
import type { SizeGauge } from "../size_gauge.ts";
import type { RateDecision, RateLimiter } from "./rate_limiter.ts";
import { _SINK } from "./rate_limiter.ts";
import type { RateAlgorithm, RateStore, RateStoreCheck } from "./rate_store.ts";
import { _KeyTable } from "./_key_table.ts";
import { _given, _nonNegativeInt, _positiveInt, _show } from "../_validate.ts";
import { _checkCost, _emitRateDeny } from "./_rate.ts";
import { _SHARED, _sharedTake, type _DeniedEntry, type _SharedParts } from "./_shared_take.ts";

/** What a shared limiter does when a store call fails (timeout, error, too many calls outstanding). */
export type StoreFailureMode = "open" | "closed";

/** The options a keyed limiter takes to keep its budgets in a shared store. */
export interface SharedLimiterOptions {
  /**
   * The shared store (`createRedisStore` from `serve-hygiene/redis`, or
   * {@linkcode createRateStore} over a backend of your own). With it the limiter's `take`
   * may answer with a promise, and its `name` is required: limiters of one name (and
   * algorithm) share one budget across every instance using the store.
   * @default undefined (an in-memory limiter)
   */
  store?: RateStore | undefined;
  /**
   * A failed store call (timeout, error, `maxPending` reached): `"closed"` denies the
   * request (429, reason "limiter-error"), `"open"` admits it. Applies until the store
   * falls back; then the insurance limiter answers.
   * @default "closed"
   */
  failure?: StoreFailureMode | undefined;
  /**
   * Instances sharing the budget. While the store falls back, each instance enforces its
   * share in memory: the limit (burst and rate) ÷ this, at least 1.
   * @default 1
   */
  expectedInstances?: number | undefined;
  /**
   * An in-memory limiter asked before the store, and charged before the call: a request it
   * denies costs no round-trip. It caps the calls this instance makes (a request it admitted
   * that the store then denied is not refunded).
   * @default undefined
   */
  localLimiter?: RateLimiter | undefined;
  /**
   * The most keys held in the denied-key cache: a key the store denied until T is denied
   * locally, with no call, until T. At the cap, keys past their T make room; when none has,
   * a new denial is simply not cached. 0 disables the cache.
   * @default the limiter's `maxKeys`
   */
  maxDeniedKeys?: number | undefined;
}

/** A keyed limiter over a shared store. `take` is synchronous when answered locally. */
export interface SharedRateLimiter {
  /** Names the shared budget across instances; the class label of events. */
  readonly name: string;
  readonly algorithm: RateAlgorithm;
  /** See {@linkcode RateDecision.limit}. */
  readonly limit: number;
  /** See {@linkcode RateDecision.windowMs}. */
  readonly windowMs: number;
  /** The denied-key cache: keys held now, and the cap. */
  readonly size: SizeGauge;
  readonly clock: Clock;
  /** The Retry-After hint of a fail-closed denial, in milliseconds. */
  readonly failClosedRetryAfterMs: number;
  readonly store: RateStore;
  readonly failure: StoreFailureMode;
  /** The in-memory limiter that answers while the store falls back (limit ÷ expectedInstances). */
  readonly insurance: RateLimiter;
  /** The local pre-check, if any. */
  readonly localLimiter: RateLimiter | undefined;
  /**
   * Checks `key` and, when allowed, counts `cost` against the shared budget. Answers at once
   * (synchronously) from the denied-key cache, the local pre-check, a saturated store or the
   * insurance limiter; otherwise with a promise that settles within the store's `timeoutMs`.
   * Never rejects: a failed call fails open or closed as configured.
   */
  take(key: string, cost?: number, now?: number): RateDecision | Promise<RateDecision>;
}

/** Whether `limiter` keeps its budgets in a store. */
export function _isShared(limiter: unknown): limiter is SharedRateLimiter & { [_SHARED]: _SharedParts } {
  return typeof limiter === "object" && limiter !== null && _SHARED in limiter;
}

/** What the limiter factories hand over once they have validated their own options. */
export interface _SharedSpec {
  readonly what: string;
  readonly algorithm: RateAlgorithm;
  readonly name: string | undefined;
  readonly limit: number;
  readonly windowMs: number;
  readonly intervalMs: number;
  readonly maxKeys: number;
  readonly clock: Clock;
  readonly failClosedRetryAfterMs: number;
  readonly onEvent: EventSink | undefined;
  /** Builds the insurance limiter for `instances` instances. */
  readonly insurance: (instances: number) => RateLimiter;
}

const NAME = /^[A-Za-z0-9_.-]{1,64}$/;

/** Validates the shared options and builds the limiter (the factories call this when `store` is set). */
export function _sharedLimiter(spec: _SharedSpec, o: SharedLimiterOptions): SharedRateLimiter {
  const what = spec.what;
  const store = o.store!;
  if (typeof store?.call !== "function") {
    throw new TypeError(`Cannot ${what} as "store" must be a rate store (createRateStore, createRedisStore): current value is ${_show(store)}`);
  }
  const name = spec.name;
  if (name === undefined || !NAME.test(name)) {
    // The name is part of the shared key names: instances agree on it, and it is readable in Redis.
    throw new TypeError(`Cannot ${what} as a shared limiter's "name" must be 1-64 letters, digits, "_", "." or "-": current value is ${_show(name)}`);
  }
  const failure = _given(o.failure, "closed");
  if (failure !== "open" && failure !== "closed") {
    throw new TypeError(`Cannot ${what} as "failure" must be "open" or "closed": current value is ${_show(failure)}`);
  }
  const instances = _positiveInt(what, "expectedInstances", _given(o.expectedInstances, 1));
  const local = o.localLimiter;
  if (local !== undefined && (typeof local?.take !== "function" || typeof local.peek !== "function" || _isShared(local))) {
    throw new TypeError(`Cannot ${what} as "localLimiter" must be an in-memory rate limiter: current value is ${_show(local)}`);
  }
  const maxDenied = _nonNegativeInt(what, "maxDeniedKeys", _given(o.maxDeniedKeys, spec.maxKeys));
  const insurance = spec.insurance(instances);
  const denied = new _KeyTable<_DeniedEntry>(maxDenied, (e) => e.until);
  const { algorithm, limit, windowMs, intervalMs, clock, onEvent } = spec;
  const check = (key: string, cost: number): RateStoreCheck => ({ algorithm, limiter: name, key, cost, limit, windowMs, intervalMs });

  const limiter: SharedRateLimiter & { [_SHARED]: _SharedParts; [_SINK]: EventSink | undefined } = {
    name,
    algorithm,
    limit,
    windowMs,
    size: denied.gauge,
    clock,
    failClosedRetryAfterMs: spec.failClosedRetryAfterMs,
    store,
    failure,
    insurance,
    localLimiter: local,
    [_SHARED]: { check, denied, takeUnreported: (key, cost = 1, at, sink) => decide(key, cost, at, false, sink ?? onEvent) },
    [_SINK]: onEvent,
    take: (key, cost = 1, at) => decide(key, cost, at, true, onEvent),
  };
  // `report`: the denial is this limiter's to report (a take); a caller that reports it itself
  // (a route behind a guard) takes without, and gets the store's faults too (`faults`: a review
  // found a route's rate-store faults in the limiter's own sink, and faults_total at 0).
  function decide(key: string, cost: number, at: number | undefined, report: boolean, faults: EventSink | undefined): RateDecision | Promise<RateDecision> {
    if (cost !== 1) _checkCost("take from shared limiter", cost, limit);
    let now = NaN;
    try {
      now = at === undefined ? clock.now() : at;
    } catch {
      // A clock that throws reads as a non-finite time: the take fails closed.
    }
    const answer = (v: { d: RateDecision }) => {
      if (report && !v.d.allowed) _emitRateDeny(onEvent, v.d, name);
      return v.d;
    };
    const v = _sharedTake([{ limiter, key }], cost, now, faults);
    return v instanceof Promise ? v.then(answer) : answer(v);
  }
  return limiter;
}

/** A shared limiter's take without its deny event, for a caller that reports the refusal itself (its store's faults to `sink`). Internal. */
export function _takeUnreported(limiter: SharedRateLimiter, key: string, sink?: EventSink): RateDecision | Promise<RateDecision> {
  return _isShared(limiter) ? limiter[_SHARED].takeUnreported(key, 1, undefined, sink) : limiter.take(key);
}
