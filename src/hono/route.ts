import type { MiddlewareHandler } from "hono";
import {
  _durationMs,
  _positiveIntOrInfinity,
  _show,
  type ClientKeyFunction,
  type ClientKeyOptions,
  createClientKey,
  closesOnUnreadBody,
  createInFlightLimiter,
  declaredLength,
  denyResponse,
  type InFlightLimiterOptions,
  type EventSink,
  type RateLimiter,
  type SharedRateLimiter,
  rateLimitedResponse,
  _reporterOf,
  _routeKeyOf,
  _isShared,
  _takeUnreported,
  type RateDecision,
  type RequestContext,
  _emit,
  _keyResult,
  _sinkOf,
  _carried,
  _NOT_CARRIED,
  type _KeyList,
  _onlyKnown,
  _optionalBoolean,
  _refusingUpload,
  _uploadUnread,
  _IN_FLIGHT_LIMITER_KEYS,
} from "../core/mod.ts";
import type { Context } from "hono";
import { _requireContext, hygieneContext, peerOf } from "./context.ts";

/** How long a client whose key could not be computed is told to wait (the guard's keyed gates say the same). */
const KEY_FAILED_RETRY_MS = 1000;

/** A key function (the route's, or the guard's: its fault reported already) that threw or returned no string. */
interface _KeyFailed {
  readonly failed: unknown;
  readonly reported?: true;
}

/**
 * The route's client key — its own `key` when given, else the guard's (`clientKey`, read from
 * the context only then), else the peer's — or why that failed. The guard's failing fails
 * closed too, never falls back to the peer (behind a proxy: one budget for every client).
 */
function _routeKey(c: Context, context: RequestContext | undefined, own: boolean, keyOf: ClientKeyFunction): string | _KeyFailed {
  const guardKey = own ? undefined : _routeKeyOf(context);
  if (guardKey === false) return { failed: undefined, reported: true };
  if (guardKey !== undefined) return guardKey;
  try {
    return _keyResult(keyOf(c.req.raw, { peer: peerOf(c) }), "the client-key function");
  } catch (error) {
    return { failed: error };
  }
}

/**
 * A route whose key function failed refuses 429 (fail closed, as the guard's keyed gates do),
 * reporting the fault and the refusal to `sink`.
 */
function _keyRefused(c: Context, failure: _KeyFailed, sink: EventSink | undefined, layer: "rate" | "peer", fields: { scope?: string; limiterClass?: string }): Response {
  if (failure.reported !== true) _emit([sink], { type: "fault", source: "client-key", error: failure.failed, failed: "closed" });
  _emit([sink], { type: "deny", layer, reason: "limiter-error", status: 429, retryAfterMs: KEY_FAILED_RETRY_MS, ...fields });
  return _closingUpload(c, _kept(c, denyResponse(429, { retryAfterMs: KEY_FAILED_RETRY_MS })));
}

/**
 * A route's refusal, keeping the headers earlier middleware set with `c.header()` (a request
 * id, hand-set CORS or security headers) that are about neither the body, caching nor the
 * connection — as Hono's own middleware's answers keep them (a review: a fresh Response
 * returned from the chain lost them). `c.newResponse()` holds what was set so far.
 */
/**
 * A refusal that leaves the request's upload unread, over 64 KiB or of unknown length, ends its
 * connection, as the guard's own refusals do (a review: Deno read an 8 MiB upload to its end
 * after a route's 429). A GET or HEAD is not asked (Deno and Bun do not check their bodies).
 */
function _closingUpload(c: Context, res: Response): Response {
  return _uploadUnread(c.req.raw) ? _refusingUpload(res) : res;
}

function _kept(c: Context, res: Response): Response {
  const kept = _carried(c.newResponse(null), res);
  // Hono's compose puts the refusal in as `c.res`, and its setter copies over it every header of
  // a `c.res` made before (cors() makes one): the ones a refusal must not take are removed
  // first (a review: a 429 took an earlier Cache-Control: public and a session cookie).
  for (const name of _NOT_CARRIED) if (name !== "content-type") c.header(name, undefined);
  return kept;
}

/**
 * Caps this route's request body at `bytes` (a positive integer or `Infinity`; validated
 * here). A declared `Content-Length` over it is refused with 413 before the route's handler
 * runs; a chunked body is counted and refused with 413 once it passes the cap, however the
 * handler reads it. A cap *above* the service-wide one must also be declared in the guard's
 * `routeBodyLimits` (the guard refuses before any route runs); without it the raise throws.
 *
 * @example
 * ```ts
 * import { Hono } from "hono";
 * import { bodyLimit, hygiene } from "serve-hygiene/hono";
 * const upload = 10 * 1024 * 1024;
 * const app = new Hono().use(hygiene({ bodyLimitBytes: 1024, routeBodyLimits: [{ path: "/upload", bytes: upload }] }));
 * app.post("/upload", bodyLimit(upload), async (c) => c.text(String((await c.req.arrayBuffer()).byteLength)));
 * const res = await app.request("/upload", { method: "POST", body: "x".repeat(2048) });
 * console.assert((await res.text()) === "2048");
 * ```
 */
export const bodyLimit = (bytes: number): MiddlewareHandler => {
  _positiveIntOrInfinity("create bodyLimit", "bytes", bytes);
  return async function bodyLimit(c, next) {
    _requireContext(c, "bodyLimit").bodyLimitBytes = bytes;
    // The guard answers 413 (and reports it) once the context knows the length is over.
    const declared = declaredLength(c.req.raw.headers);
    if (declared.kind === "length" && declared.bytes > bytes) return _kept(c, denyResponse(413, { close: closesOnUnreadBody(declared) }));
    await next();
  };
};

/**
 * Sets this route's deadline (counted from the request's arrival; 408 when it passes).
 *
 * @example
 * ```ts
 * import { Hono } from "hono";
 * import { hygiene, timeout } from "serve-hygiene/hono";
 * const app = new Hono().use(hygiene());
 * app.get("/report", timeout(60_000), (c) => c.text("slow but allowed"));
 * ```
 */
export const timeout = (ms: number): MiddlewareHandler => {
  // Refused when the app is built, not on every request.
  _durationMs("create timeout", "timeoutMs", ms, { infinity: true });
  return async function timeout(c, next) {
    _requireContext(c, "timeout").timeoutMs = ms;
    await next();
  };
};

/**
 * Turns this route's deadline off (SSE streams, long upstream hops).
 *
 * @example
 * ```ts
 * import { Hono } from "hono";
 * import { hygiene, noTimeout } from "serve-hygiene/hono";
 * const app = new Hono().use(hygiene());
 * app.get("/events", noTimeout(), (c) => c.text("data: hi\n\n"));
 * ```
 */
export const noTimeout = (): MiddlewareHandler =>
  async function noTimeout(c, next) {
    _requireContext(c, "noTimeout").timeoutMs = Infinity;
    await next();
  };

/** Options of {@linkcode rateLimit}. */
export interface RateLimitOptions {
  /** The limiter (fixed window or token bucket, in memory or over a shared store), e.g. an auth-class one for /login. */
  limiter: RateLimiter | SharedRateLimiter;
  /**
   * The client key: this function, or these options' key of the peer. @default the guard's
   * (its `clientKey`: behind a trusted proxy, the forwarded client), else the peer's address
   */
  key?: ClientKeyOptions | ClientKeyFunction | undefined;
  /** Adds the IETF RateLimit fields to 429s. @default false */
  headers?: boolean | undefined;
  /** The scope a refusal is reported under (`serve_hygiene_rate_limit_denials_total{scope}`). @default "route" */
  scope?: string | undefined;
}

/**
 * A route-level rate limit, checked before the handler (an auth route calls it before any
 * credential check). 429 + Retry-After when the client's budget is spent. Behind a guard (the
 * adapter's `serve()` or `hygiene()`) a refusal is reported through the guard's `onDeny` and
 * `onEvent` (layer `rate`, the limiter's name as its class, `scope`); without one, the
 * limiter's own `onEvent` reports it.
 *
 * @example
 * ```ts
 * import { Hono } from "hono";
 * import { createFixedWindowLimiter } from "serve-hygiene";
 * import { rateLimit } from "serve-hygiene/hono";
 * const app = new Hono();
 * app.post("/login", rateLimit({ limiter: createFixedWindowLimiter({ limit: 5, windowMs: 60_000, name: "auth" }) }), (c) => c.text("checked"));
 * ```
 */
/** Every option of {@linkcode RateLimitOptions}: any other key is refused when the middleware is made. */
const RATE_LIMIT_KEYS: _KeyList<RateLimitOptions> = { limiter: true, key: true, headers: true, scope: true };

export const rateLimit = (options: RateLimitOptions): MiddlewareHandler => {
  _onlyKnown("create rateLimit", options, RATE_LIMIT_KEYS);
  _optionalBoolean("create rateLimit", "headers", options?.headers);
  const limiter = options?.limiter;
  // Checked when the app is built, not on the first request (a factory passed for its limiter,
  // a limiter missing): a route that answers 500 to every request would be found late.
  if (typeof limiter?.take !== "function" || (!_isShared(limiter) && typeof (limiter as RateLimiter).peek !== "function")) {
    throw new TypeError(`Cannot create rateLimit as "limiter" must be a rate limiter (createFixedWindowLimiter(), createTokenBucketLimiter()): current value is ${_show(limiter)}`);
  }
  const keyOf = typeof options.key === "function" ? options.key : createClientKey(options.key);
  const scope = options.scope ?? "route";
  const limiterClass = limiter.name === undefined ? {} : { limiterClass: limiter.name };
  // Without a guard, what this middleware refuses itself (its key function failed) is reported
  // where the limiter reports its own refusals.
  const ownSink = _sinkOf(limiter);
  return async function rateLimit(c, next) {
    const context = hygieneContext(c);
    const report = _reporterOf(context);
    const key = _routeKey(c, context, options.key !== undefined, keyOf);
    if (typeof key !== "string") return _keyRefused(c, key, report ?? ownSink, "rate", { scope, ...limiterClass });
    // Behind a guard: peek (which reports nothing), then take, and report a refusal through
    // the guard's sinks; the limiter's own sink never sees it, so it is counted once. A shared
    // limiter is taken without its own report (maybe asynchronously) and reported here too.
    let decision: RateDecision;
    if (report !== undefined && !_isShared(limiter)) {
      const local = limiter as RateLimiter;
      decision = local.peek(key);
      if (decision.allowed) decision = local.take(key);
    } else if (report !== undefined) {
      const taken = _takeUnreported(limiter as SharedRateLimiter, key, report);
      decision = taken instanceof Promise ? await taken : taken;
    } else {
      const taken = limiter.take(key);
      decision = taken instanceof Promise ? await taken : taken;
    }
    // The request ended while the store answered (its deadline's 408, a forced drain's 503,
    // the client leaving): the guard answered it, and its route must not start now (a review
    // saw a charge made after the client was told to retry). Nobody reads this answer.
    if (context?.signal.aborted === true) return denyResponse(503);
    if (!decision.allowed) {
      const reason = decision.reason ?? "over-limit";
      report?.({
        type: "deny",
        layer: "rate",
        reason,
        status: 429,
        retryAfterMs: decision.retryAfterMs,
        scope,
        ...(limiter.name === undefined ? {} : { limiterClass: limiter.name }),
      });
      // The fields only on an over-limit 429: a store that failed has no budget to tell.
      return _closingUpload(c, _kept(c, rateLimitedResponse(decision, { rateLimitHeaders: options.headers === true && reason === "over-limit" })));
    }
    await next();
  };
};

/** Options of {@linkcode inFlightCap}. */
export interface InFlightCapOptions extends InFlightLimiterOptions {
  /**
   * The client key: this function, or these options' key of the peer. @default the guard's
   * (its `clientKey`: behind a trusted proxy, the forwarded client), else the peer's address
   */
  key?: ClientKeyOptions | ClientKeyFunction | undefined;
}

/**
 * A route-level per-client in-flight cap: a client at its cap is refused at once (429) — or,
 * with `shedWaitMs`, waits that long for one of its own slots first — and the route's whole
 * lane past its cap (503). The slot is held until the handler settles. Behind a guard (the
 * adapter's `serve()` or `hygiene()`) a refusal is reported through the guard's `onDeny` and
 * `onEvent` (layer `peer`, `name` as its class); without one, through `onEvent` here.
 *
 * @example
 * ```ts
 * import { Hono } from "hono";
 * import { inFlightCap } from "serve-hygiene/hono";
 * const app = new Hono();
 * app.get("/export", inFlightCap({ perKey: 1, overall: 8 }), (c) => c.text("one at a time per client"));
 * ```
 */
/** Every option of {@linkcode InFlightCapOptions}: any other key is refused when the middleware is made. */
const IN_FLIGHT_CAP_KEYS: _KeyList<InFlightCapOptions> = { ..._IN_FLIGHT_LIMITER_KEYS, key: true };

export const inFlightCap = (options: InFlightCapOptions = {}): MiddlewareHandler => {
  _onlyKnown("create inFlightCap", options, IN_FLIGHT_CAP_KEYS);
  const { key, onEvent, ...limiterOptions } = options;
  // Refusals are reported here, to the request's guard or else to `onEvent`; the limiter's
  // own sink keeps only its faults, so a refusal is never counted twice.
  const faults: EventSink | undefined = onEvent === undefined ? undefined : (event) => event.type !== "deny" && onEvent(event);
  const limiter = createInFlightLimiter({ ...limiterOptions, onEvent: faults });
  const limiterClass = limiterOptions.name === undefined ? {} : { limiterClass: limiterOptions.name };
  const keyOf = typeof key === "function" ? key : createClientKey(key);
  return async function inFlightCap(c, next) {
    const context = hygieneContext(c);
    const clientKey = _routeKey(c, context, key !== undefined, keyOf);
    if (typeof clientKey !== "string") return _keyRefused(c, clientKey, _reporterOf(context) ?? onEvent, "peer", limiterClass);
    // A wait ends with the request: at its deadline or a forced drain too (the context's
    // signal), not only when the client leaves — else a request answered 408 while it waited
    // ran its handler later, or was reported refused a second time at the wait's end.
    const slot = limiter.shedWaitMs === 0 ? limiter.tryAcquire(clientKey) : await limiter.acquire(clientKey, context?.signal ?? c.req.raw.signal);
    if (!slot.ok) {
      // "aborted": the client left while waiting; nobody is answered, nothing is reported.
      if (slot.reason !== "aborted") {
        const report = _reporterOf(context) ?? onEvent;
        try {
          report?.({ type: "deny", layer: "peer", reason: slot.reason, status: slot.status, retryAfterMs: slot.retryAfterMs, ...limiterClass });
        } catch {
          // A sink that throws is ignored for that event (EventSink): the client still gets its answer.
        }
      }
      return _closingUpload(c, _kept(c, denyResponse(slot.status, { retryAfterMs: slot.retryAfterMs })));
    }
    try {
      await next();
    } finally {
      slot.release();
    }
  };
};
