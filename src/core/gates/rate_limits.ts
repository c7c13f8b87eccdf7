// Gate 5: the keyed rate limits, the client key's budgets charged all or nothing, coarse to
// fine (a single rule asks its limiter directly). The rate limits report their own refusals
// (the deny event names the scope and the limiter's class); the guard sends the answer built
// here (429 + Retry-After, RateLimit fields).
import type { Clock } from "../clock.ts";
import type { EventSink } from "../events.ts";
import type { _KeyedParts } from "../limits/keyed_gates.ts";
import type { RateDecision } from "../limits/rate_limiter.ts";
import { rateLimitedResponse } from "../limits/rate_headers.ts";
import type { _Admission } from "../request/admission.ts";
import { type Gate, type GateVerdict, PASS } from "./gate.ts";
import { _keyFor } from "./_client_key.ts";

/** The rate-limit gate over the keyed parts (their `rate` must be set). */
export function _rateLimitGate(parts: _KeyedParts, sink: EventSink, clock: Clock): Gate {
  const take = parts.rate!;
  const headers = parts.rateLimitHeaders ? { rateLimitHeaders: true } : undefined;
  return {
    layer: "rate",
    processWide: false,
    fromHead: parts.fromHead,
    admit(a: _Admission) {
      const failed = _keyFor(a, parts, sink);
      if (failed !== undefined) return failed;
      const d = take(a.request, a.key!, a.waited ? clock.now() : a.startedAt);
      // A shared store's answer comes later (within its timeout); other requests go on meanwhile.
      return d instanceof Promise ? d.then(verdict) : verdict(d);
    },
  };

  function verdict(d: RateDecision): GateVerdict {
    if (d.allowed) return PASS;
    // Without the RateLimit fields the guard's prebuilt 429 is the same answer; and the fields
    // go only on an `over-limit` 429 (a failed key, skip or limiter has no budget to tell).
    const reason = d.reason ?? "over-limit";
    return headers === undefined || reason !== "over-limit"
      ? { reason, status: 429, retryAfterMs: d.retryAfterMs, reported: true }
      : { reason, status: 429, reported: true, response: rateLimitedResponse(d, headers) };
  }
}
