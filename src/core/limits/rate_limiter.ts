// The contract shared by the keyed rate limiters (fixed window, token bucket) and the
// scoped limiter that composes them: the decision they return, the interface they
// implement, and the error a caller throws with a denial.
import type { Clock } from "../clock.ts";
import type { EventSink } from "../events.ts";
import { _hasCode, HygieneError } from "../errors.ts";
import type { SizeGauge } from "../size_gauge.ts";

/**
 * Why a rate limiter denied: the key is over its budget (`"over-limit"`), the key table is
 * full of active keys and the key is unseen (`"table-full"`), or the limiter's own state or
 * clock was broken and it failed closed (`"limiter-error"`).
 */
export type RateDenyReason = "over-limit" | "table-full" | "limiter-error";

/** The answer of one rate check. A fresh object per call: callers may keep it. */
export interface RateDecision {
  /** Whether the request may proceed (and, for `take`, was counted). */
  readonly allowed: boolean;
  /** How long to wait before retrying, in milliseconds; 0 when allowed. */
  readonly retryAfterMs: number;
  /** Cost units the key may still spend now. */
  readonly remaining: number;
  /** The budget of one window (fixed window) or the burst (token bucket). */
  readonly limit: number;
  /** Milliseconds until the key's budget is whole again (the window edge; a full bucket). */
  readonly resetMs: number;
  /** The policy window: the fixed window, or the time a token bucket takes to refill its burst. */
  readonly windowMs: number;
  /** Why it was denied; undefined when allowed. */
  readonly reason: RateDenyReason | undefined;
}

/**
 * A keyed rate limiter. `take` counts the request when it is allowed; `peek` answers the
 * same question without counting anything, so several limiters can be checked before any of
 * them is charged (see {@linkcode createScopedLimiter}).
 *
 * Both accept the time as `now` (the limiter's clock's milliseconds) so a caller that has
 * already read the clock does not pay for a second read.
 */
export interface RateLimiter {
  /** The limiter's class label for events and metrics ("ip", "auth"); never a client key. */
  readonly name: string | undefined;
  /** See {@linkcode RateDecision.limit}. */
  readonly limit: number;
  /** See {@linkcode RateDecision.windowMs}. */
  readonly windowMs: number;
  /** Keys held in the table now, and the cap. */
  readonly size: SizeGauge;
  /** The time source `now` is read from when a call does not pass it. */
  readonly clock: Clock;
  /** The Retry-After hint of a fail-closed denial, in milliseconds. */
  readonly failClosedRetryAfterMs: number;
  /** Checks `key` and, when allowed, counts `cost` against it. */
  take(key: string, cost?: number, now?: number): RateDecision;
  /** Answers as `take` would, without counting and without emitting a deny event. */
  peek(key: string, cost?: number, now?: number): RateDecision;
}

const CODE = "RATE_LIMITED";

/**
 * A denial by a rate limiter, for callers that signal refusals by throwing (middleware).
 * Its message is for logs; the client gets a generic body.
 *
 * @example
 * ```ts
 * import { RateLimitedError, isRateLimitedError } from "serve-hygiene";
 * const error = new RateLimitedError({ retryAfterMs: 1500, limit: 600 });
 * console.assert(isRateLimitedError(error) && error.code === "RATE_LIMITED");
 * console.assert(error.retryAfterMs === 1500 && error.limit === 600);
 * ```
 */
export class RateLimitedError extends HygieneError {
  declare readonly code: typeof CODE;
  /** How long to wait before retrying, in milliseconds. */
  readonly retryAfterMs: number;
  /** The budget that was exhausted. */
  readonly limit: number;
  /** The scope that refused, when a scoped limiter refused. */
  readonly scope: string | undefined;

  constructor(decision: { retryAfterMs: number; limit: number; scope?: string | undefined }, options?: { cause?: unknown }) {
    super(CODE, `Rate limited: retry after ${Math.ceil(decision.retryAfterMs)} ms`, options);
    this.name = new.target === RateLimitedError ? "RateLimitedError" : new.target.name;
    this.retryAfterMs = decision.retryAfterMs;
    this.limit = decision.limit;
    this.scope = decision.scope;
  }
}

/**
 * Whether `error` is a {@linkcode RateLimitedError}, from this copy of the package or another.
 *
 * @example
 * ```ts
 * import { isRateLimitedError } from "serve-hygiene";
 * console.assert(!isRateLimitedError(new Error("nope")));
 * ```
 */
export function isRateLimitedError(error: unknown): error is RateLimitedError {
  return _hasCode<RateLimitedError>(error, CODE, "retryAfterMs");
}

/** Where the core's limiters keep their own event sink (internal); a registry symbol, so another copy's limiter reports there too. */
export const _SINK: unique symbol = Symbol.for("serve-hygiene.sink") as never;

/**
 * A limiter's own event sink, when it is one of the core's: a route middleware without a guard
 * reports there what it refuses itself (its key function failed), as the limiter reports its own.
 */
export function _sinkOf(limiter: object): EventSink | undefined {
  return (limiter as { [_SINK]?: EventSink })[_SINK];
}
