// The HTTP fields of rate limits: the IETF RateLimit / RateLimit-Policy fields
// (draft-ietf-httpapi-ratelimit-headers, structured-field form:
//   RateLimit: "default";r=0;t=30
//   RateLimit-Policy: "default";q=600;w=60)
// and the 429 of a denial. Retry-After rounding lives with the other refusals, in
// responses.ts (`retryAfterSeconds`: whole seconds, rounded up, at least 1).
import type { RateDecision } from "./rate_limiter.ts";
import { denyResponse } from "../request/responses.ts";
import { _show } from "../_validate.ts";

/** Seconds fields are capped here (about 68 years): a structured-field integer stays valid. */
const MAX_SECONDS = 2_147_483_647;

/** Options of {@linkcode rateLimitHeaders}. */
export interface RateLimitHeadersOptions {
  /** Also send `RateLimit-Policy` (the quota and window). @default false */
  policy?: boolean | undefined;
  /** The policy identifier, an sf-string of printable ASCII. @default "default" */
  name?: string | undefined;
}

function _sfString(value: string): string {
  // sf-string: printable ASCII only, with `"` and `\` escaped.
  if (!/^[\x20-\x7e]*$/.test(value)) {
    throw new TypeError(`Cannot build RateLimit fields as "name" must be printable ASCII: current value is ${_show(value)}`);
  }
  return `"${value.replace(/[\\"]/g, "\\$&")}"`;
}

function _whole(n: number): number {
  return n > 0 ? Math.min(Math.floor(n), MAX_SECONDS) : 0;
}

/**
 * The `RateLimit` field of a decision (remaining quota `r`, seconds to reset `t`), and
 * with `policy` the `RateLimit-Policy` field (quota `q`, window `w` in seconds). Returned as
 * a plain record, ready for `new Headers(...)` or `headers.set`; empty for a decision no
 * budget made (a scoped limiter's whose every scope skipped the request: its limit is
 * Infinity), which has no quota to tell.
 *
 * @example
 * ```ts
 * import { rateLimitHeaders } from "serve-hygiene";
 * const decision = { allowed: true, retryAfterMs: 0, remaining: 599, limit: 600, resetMs: 30_000, windowMs: 60_000, reason: undefined };
 * const fields = rateLimitHeaders(decision, { policy: true });
 * console.assert(fields["RateLimit"] === '"default";r=599;t=30');
 * console.assert(fields["RateLimit-Policy"] === '"default";q=600;w=60');
 * ```
 */
export function rateLimitHeaders(decision: RateDecision, options: RateLimitHeadersOptions = {}): Record<string, string> {
  const id = _sfString(options.name ?? "default");
  // No budget metered it: fields would advertise a quota of 2^31 - 1.
  if (decision.limit === Infinity) return {};
  const fields: Record<string, string> = {
    RateLimit: `${id};r=${_whole(decision.remaining)};t=${_whole(Math.ceil(decision.resetMs / 1000))}`,
  };
  if (options.policy) {
    // `w` is whole seconds: a window that is not (500 ms, a bucket's 1.5 s) is told as the next
    // whole second, its quota scaled to it — left as it was, 10 a second read as 1 (a review).
    // (A token bucket's window, burst × 1000 / rate, is inexact in binary: read to 1e-9, or 15 a
    // second read as q=14, and a 2 s window as w=3: the diff review.)
    const w = Math.max(1, _whole(Math.ceil(decision.windowMs / 1000 - 1e-9)));
    const q = decision.windowMs > 0 ? _whole((decision.limit * w * 1000) / decision.windowMs + 1e-9) : _whole(decision.limit);
    fields["RateLimit-Policy"] = `${id};q=${q};w=${w}`;
  }
  return fields;
}

/** Options of {@linkcode rateLimitedResponse}. */
export interface RateLimitedResponseOptions {
  /**
   * Also send the RateLimit fields (and, if asked, RateLimit-Policy). Off by default: a
   * denial says when to come back, not which budget tripped.
   * @default false
   */
  rateLimitHeaders?: boolean | RateLimitHeadersOptions | undefined;
}

/**
 * A 429 with a generic `text/plain` body, `Retry-After` in whole seconds (rounded up, at
 * least 1) and `Cache-Control: no-store`, built by {@linkcode denyResponse}. The body never
 * says which limit tripped.
 *
 * @example
 * ```ts
 * import { rateLimitedResponse } from "serve-hygiene";
 * const response = rateLimitedResponse({ allowed: false, retryAfterMs: 1200, remaining: 0, limit: 600, resetMs: 1200, windowMs: 60_000, reason: "over-limit" });
 * console.assert(response.status === 429 && response.headers.get("retry-after") === "2");
 * ```
 */
export function rateLimitedResponse(decision: RateDecision, options: RateLimitedResponseOptions = {}): Response {
  const extra = options.rateLimitHeaders;
  const headers = extra ? rateLimitHeaders(decision, extra === true ? {} : extra) : undefined;
  return denyResponse(429, { retryAfterMs: decision.retryAfterMs, ...(headers ? { headers } : {}) });
}
