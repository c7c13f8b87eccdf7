import type { Clock } from "../clock.ts";
import type { EventSink } from "../events.ts";
import type { RateDecision, RateLimiter } from "./rate_limiter.ts";
import { type _KeyList, _onlyKnown, _show } from "../_validate.ts";
import { _checkCost, _decision, _emitFault, _emitRateDeny } from "./_rate.ts";
import { _keyResult, _skipResult } from "../_user_code.ts";
import { _isShared, type SharedRateLimiter } from "./shared_limiter.ts";
import { _sharedScopedTake } from "./_scoped_shared.ts";
import { _longer, type _Verdict } from "./_shared_take.ts";

/** One budget of a {@linkcode ScopedLimiter}. */
export interface RateScope<C> {
  /** The scope's name, reported on refusal: "global", "listener", "tenant", "tenant-total", … */
  name: string;
  /**
   * The limiter holding this scope's budgets. One limiter per scope: it may not be shared.
   * Limiters over a store (`store` option) make the scoped limiter's `take` asynchronous when
   * it calls the store; they must all use one store and distinct names.
   */
  limiter: RateLimiter | SharedRateLimiter;
  /**
   * Picks the bucket of this scope for a request. A scope without one is a single shared
   * bucket (keyed by the scope's name), e.g. "global".
   * @default () => name
   */
  key?: ((ctx: C) => string) | undefined;
  /**
   * The requests this scope does not meter: neither charged nor refused by it (e.g. the
   * orchestrator's health probes, which a budget shared with other clients could lock out).
   * Asked before the key; one that throws denies at this scope, as a throwing key function does.
   */
  skip?: ((ctx: C) => boolean) | undefined;
}

/** Options of {@linkcode createScopedLimiter}. */
export interface ScopedLimiterOptions<C> {
  /** The scopes, coarsest first. A scope is on by being listed. At least one. */
  scopes: readonly RateScope<C>[];
  /**
   * Time source when a call does not pass `now`; the time is read once and handed to every
   * scope, so the scopes' limiters should share it.
   * @default the first scope's limiter's clock
   */
  clock?: Clock | undefined;
  /** Receives the deny event of a refusal (with its scope) and fault events. @default undefined */
  onEvent?: EventSink | undefined;
}

/** A decision of a scoped limiter, with the scope it speaks for. */
export interface ScopedRateDecision extends RateDecision {
  /**
   * Denied: the scope whose refusal is the longest (its `retryAfterMs`: when every scope
   * admits again; the coarsest on a tie). Allowed: the scope with the least remaining
   * (coarsest on a tie), whose figures the decision carries (for RateLimit headers); `""`
   * when every scope skipped the request (`remaining` and `limit` are then Infinity).
   */
  readonly scope: string;
}

/** Several rate budgets charged all or nothing. */
export interface ScopedLimiter<C> {
  /** The scope names, coarsest first. */
  readonly scopes: readonly string[];
  /**
   * Checks every scope, coarsest first, and charges `cost` to every one of them only if all
   * admit: a caller over its own budget does not drain a shared one.
   */
  take(ctx: C, cost?: number, now?: number): ScopedRateDecision;
}

/**
 * A scoped limiter with scopes over a shared store: `take` answers with a promise when it
 * calls the store (once, for every shared scope), synchronously when answered locally.
 */
export interface SharedScopedLimiter<C> {
  /** The scope names, coarsest first. */
  readonly scopes: readonly string[];
  /**
   * Asks the in-memory scopes first (a refusal costs no round-trip), then every shared scope
   * in one store call that charges them all or none, then charges the in-memory scopes.
   */
  take(ctx: C, cost?: number, now?: number): ScopedRateDecision | Promise<ScopedRateDecision>;
}

/** Every scope skipped the request: nothing metered it. */
export const _UNMETERED: ScopedRateDecision = Object.freeze({ ..._decisionFields(_decision(true, 0, Infinity, Infinity, 0, 0, undefined)), scope: "" });

function _decisionFields(d: RateDecision): RateDecision {
  return { allowed: d.allowed, retryAfterMs: d.retryAfterMs, remaining: d.remaining, limit: d.limit, resetMs: d.resetMs, windowMs: d.windowMs, reason: d.reason };
}

function _scoped(d: RateDecision, scope: string): ScopedRateDecision {
  return {
    allowed: d.allowed,
    retryAfterMs: d.retryAfterMs,
    remaining: d.remaining,
    limit: d.limit,
    resetMs: d.resetMs,
    windowMs: d.windowMs,
    reason: d.reason,
    scope,
  };
}

/** Every option of {@linkcode ScopedLimiterOptions}, and every key of a {@linkcode RateScope}: any other is refused. */
const SCOPED_LIMITER_KEYS: _KeyList<ScopedLimiterOptions<unknown>> = { scopes: true, clock: true, onEvent: true };
const SCOPE_KEYS: _KeyList<RateScope<unknown>> = { name: true, limiter: true, key: true, skip: true };

/**
 * Creates a scoped limiter: budgets from coarse (global, listener) to fine (tenant, client),
 * admitted all or nothing. Each scope is first asked without being charged (`peek`); only
 * when every scope admits is each one charged (`take`). Within one synchronous call nothing
 * else can move the limiters between the two, so the check is exact.
 *
 * Fails closed: a key function, or a (third-party) limiter's `peek` or `take`, that throws
 * denies the request at its scope with reason "limiter-error" and that scope's limiter's
 * fail-closed Retry-After, and emits a fault event. (A `take` that throws comes after the
 * coarser scopes were charged; nothing is refunded.) The limiters' own
 * faults are emitted through their own `onEvent`: give every limiter and this one the same
 * sink. Deny events come from here (the limiters' `peek` emits none).
 *
 * @example A tenant over its own budget does not drain the global one
 * ```ts
 * import { createFixedWindowLimiter, createManualClock, createScopedLimiter } from "serve-hygiene";
 * const clock = createManualClock();
 * const scoped = createScopedLimiter<{ tenant: string }>({
 *   scopes: [
 *     { name: "global", limiter: createFixedWindowLimiter({ limit: 100, clock }) },
 *     { name: "tenant", limiter: createFixedWindowLimiter({ limit: 1, clock }), key: (c) => c.tenant },
 *   ],
 * });
 * console.assert(scoped.take({ tenant: "a" }).allowed);
 * const refused = scoped.take({ tenant: "a" });
 * console.assert(!refused.allowed && refused.scope === "tenant");
 * console.assert(scoped.take({ tenant: "b" }).remaining === 0); // tenant b's own budget of 1
 * ```
 *
 * Scopes over a shared store (limiters given a `store`) are checked and charged in one
 * store call, all or nothing across every instance; the in-memory scopes are peeked before
 * it and charged after it admits. Between the two another request of this process may spend
 * an in-memory budget: the request is then denied though its shared scopes were charged
 * (never the reverse: nothing is admitted over a budget).
 */
export function createScopedLimiter<C>(options: ScopedLimiterOptions<C> & { scopes: readonly (RateScope<C> & { limiter: RateLimiter })[] }): ScopedLimiter<C>;
export function createScopedLimiter<C>(options: ScopedLimiterOptions<C>): SharedScopedLimiter<C>;
export function createScopedLimiter<C>(options: ScopedLimiterOptions<C>): ScopedLimiter<C> | SharedScopedLimiter<C> {
  const what = "create scoped limiter";
  _onlyKnown(what, options, SCOPED_LIMITER_KEYS);
  const scopes = options?.scopes;
  if (!Array.isArray(scopes) || scopes.length === 0) {
    throw new TypeError(`Cannot ${what} as "scopes" must be a non-empty array: current value is ${_show(scopes)}`);
  }
  const names = new Set<string>();
  const limiters = new Set<RateLimiter | SharedRateLimiter>();
  for (const s of scopes) {
    _onlyKnown(what, s, SCOPE_KEYS, `scopes[${names.size}]`);
    if (typeof s?.name !== "string" || names.has(s.name)) {
      throw new TypeError(`Cannot ${what} as every scope needs a distinct "name": current value is ${_show(s?.name)}`);
    }
    const l = s.limiter;
    if (typeof l?.take !== "function" || (!_isShared(l) && typeof (l as RateLimiter).peek !== "function") || limiters.has(l)) {
      // One limiter in two scopes would be peeked twice as if unshared, then overcharged.
      throw new TypeError(`Cannot ${what} as scope ${_show(s.name)} needs a limiter of its own`);
    }
    if (s.key !== undefined && typeof s.key !== "function") {
      throw new TypeError(`Cannot ${what} as the "key" of scope ${_show(s.name)} must be a function: current value is ${_show(s.key)}`);
    }
    if (s.skip !== undefined && typeof s.skip !== "function") {
      throw new TypeError(`Cannot ${what} as the "skip" of scope ${_show(s.name)} must be a function: current value is ${_show(s.skip)}`);
    }
    names.add(s.name);
    limiters.add(s.limiter);
  }
  const list = scopes.map((s) => ({ name: s.name, limiter: s.limiter as RateLimiter, key: s.key, skip: s.skip }));
  const clock = options.clock ?? list[0]!.limiter.clock;
  const sink = options.onEvent;
  const shared = scopes.filter((s) => _isShared(s.limiter)).map((s) => s.limiter as SharedRateLimiter);
  if (shared.length > 0) {
    if (new Set(shared.map((l) => l.store)).size > 1) {
      throw new TypeError(`Cannot ${what} as its shared scopes must use one store (one call charges them all or none)`);
    }
    if (new Set(shared.map((l) => `${l.algorithm}:${l.name}`)).size < shared.length) {
      throw new TypeError(`Cannot ${what} as its shared scopes' limiters must have distinct names (a name is a budget in the store)`);
    }
  }

  const refuse = (d: RateDecision, scope: (typeof list)[number]): ScopedRateDecision => {
    _emitRateDeny(sink, d, scope.limiter.name, scope.name);
    return _scoped(d, scope.name);
  };

  // A throwing key function or clock: deny at that scope, as its limiter would fail.
  const failClosed = (error: unknown, scope: (typeof list)[number]): ScopedRateDecision => {
    _emitFault(sink, error);
    const { limit, windowMs } = scope.limiter;
    const hint = scope.limiter.failClosedRetryAfterMs;
    // A foreign limiter may not state its hint: a second, rather than a NaN Retry-After.
    const ms = typeof hint === "number" && hint > 0 && hint < Infinity ? hint : 1000;
    return refuse(_decision(false, ms, 0, limit, ms, windowMs, "limiter-error"), scope);
  };

  if (shared.length > 0) {
    return {
      scopes: Object.freeze(list.map((s) => s.name)),
      take: _sharedScopedTake<C, ScopedRateDecision>(list, clock, sink, refuse, failClosed, _scoped, _UNMETERED),
    };
  }

  return {
    scopes: Object.freeze(list.map((s) => s.name)),
    take(ctx, cost = 1, at) {
      let now: number;
      try {
        now = at === undefined ? clock.now() : at;
      } catch (error) {
        return failClosed(error, list[0]!);
      }
      // A cost no scope could ever pass is the caller's bug: thrown, never read as a fault.
      if (cost !== 1) for (const s of list) _checkCost("take from scoped limiter", cost, s.limiter.limit);
      // A skipped scope's key stays undefined: neither peeked nor charged.
      const keys: (string | undefined)[] = new Array(list.length);
      // Every scope is peeked, a refused request too: its Retry-After is the longest refusal's,
      // when every scope admits again (a review: the first refusing rule's shorter wait sent an
      // obedient client into the next 429). Nothing is charged.
      let refused: _Verdict | undefined;
      for (let i = 0; i < list.length; i++) {
        const scope = list[i]!;
        let key: string;
        let d: RateDecision;
        try {
          if (scope.skip !== undefined && _skipResult(scope.skip(ctx), "a scope's (a rateLimits rule's) skip function")) continue;
          key = scope.key === undefined ? scope.name : _keyResult(scope.key(ctx), "a scope's (a rateLimits rule's) key function");
          // A third-party limiter's peek that throws denies, as its take would fail closed.
          d = scope.limiter.peek(key, cost, now);
        } catch (error) {
          return failClosed(error, scope);
        }
        if (!d.allowed) refused = _longer(refused, d, i);
        keys[i] = key;
      }
      if (refused !== undefined) return refuse(refused.d, list[refused.at]!);
      let tightest: RateDecision | undefined;
      let tightestScope = "";
      for (let i = 0; i < list.length; i++) {
        if (keys[i] === undefined) continue;
        let d: RateDecision;
        try {
          d = list[i]!.limiter.take(keys[i]!, cost, now);
        } catch (error) {
          return failClosed(error, list[i]!);
        }
        // Unreachable with this module's limiters (nothing moves between peek and take);
        // a foreign limiter whose peek disagrees with its take is reported, not hidden.
        if (!d.allowed) return _scoped(d, list[i]!.name);
        if (tightest === undefined || d.remaining < tightest.remaining) {
          tightest = d;
          tightestScope = list[i]!.name;
        }
      }
      return tightest === undefined ? _UNMETERED : _scoped(tightest, tightestScope);
    },
  };
}
