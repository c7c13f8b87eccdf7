// Gate 5 with a single rate-limit rule: the rule's limiter asked directly, without the scoped
// limiter's per-request context, key list and decision copy. It decides and reports exactly
// as a scoped limiter of one scope would (peek, then take; a throwing key function or limiter
// fails closed with the limiter's own Retry-After and a fault event).
import type { EventSink } from "../events.ts";
import type { RateDecision, RateLimiter } from "../limits/rate_limiter.ts";
import { _ADMIT, type _Admits, _decision, _emitFault, _emitRateDeny } from "../limits/_rate.ts";
import { _keyResult, _skipResult } from "../_user_code.ts";
import { _UNMETERED } from "../limits/scopes.ts";

/** Charges one request to one rule's limiter (already validated by a scoped limiter). */
export function _oneRule(
  limiter: RateLimiter,
  scope: string,
  pick: ((request: Request, clientKey: string) => string) | undefined,
  skip: ((request: Request, clientKey: string) => boolean) | undefined,
  sink: EventSink,
): (request: Request, key: string, now: number) => RateDecision {
  const failClosed = (error: unknown): RateDecision => {
    _emitFault(sink, error);
    const hint = limiter.failClosedRetryAfterMs;
    // A foreign limiter may not state its hint: a second, rather than a NaN Retry-After.
    const ms = typeof hint === "number" && hint > 0 && hint < Infinity ? hint : 1000;
    const d = _decision(false, ms, 0, limiter.limit, ms, limiter.windowMs, "limiter-error");
    _emitRateDeny(sink, d, limiter.name, scope);
    return d;
  };
  // The core's own limiters admit in one call (charge, no report of their own, no decision
  // built for a pass); a foreign one is peeked at, then charged.
  const admit = (limiter as _Admits)[_ADMIT];
  return (request, clientKey, now) => {
    let key = clientKey;
    let d: RateDecision;
    try {
      if (skip !== undefined && _skipResult(skip(request, clientKey), "a rate rule's skip function")) return _UNMETERED;
      if (pick !== undefined) key = _keyResult(pick(request, clientKey), "a rate rule's key function");
      d = admit !== undefined ? admit(key, now) : limiter.peek(key, 1, now);
    } catch (error) {
      return failClosed(error);
    }
    if (!d.allowed) {
      _emitRateDeny(sink, d, limiter.name, scope);
      return d;
    }
    if (admit !== undefined) return d;
    try {
      return limiter.take(key, 1, now);
    } catch (error) {
      return failClosed(error);
    }
  };
}
