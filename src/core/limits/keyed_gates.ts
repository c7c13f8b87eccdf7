import type { Clock } from "../clock.ts";
import { _CLIENT_KEY_KEYS, type ClientKeyFunction, type ClientKeyOptions, createClientKey } from "./client_key.ts";
import type { EventSink } from "../events.ts";
import { _createInFlightLimiter, _IN_FLIGHT_LIMITER_KEYS, type _InFlightLimiter, type createInFlightLimiter, type InFlightLimiterOptions, type Slot } from "./inflight_limit.ts";
import { rateLimitedResponse } from "./rate_headers.ts";
import type { RateDecision, RateLimiter } from "./rate_limiter.ts";
import { _oneRule } from "../gates/_one_rule.ts";
import { denyResponse } from "../request/responses.ts";
import { createScopedLimiter, type ScopedLimiter, type SharedScopedLimiter } from "./scopes.ts";
import { _isShared, type SharedRateLimiter } from "./shared_limiter.ts";
import type { PeerAddress } from "../host/server.ts";
import { _emit } from "../_emit.ts";
import { _given, type _KeyList, _object, _onlyKnown, _show } from "../_validate.ts";

/** One budget of gate 5: a limiter, the scope it speaks for, and how a request picks its bucket. */
export interface RateLimitRule {
  /** An in-memory limiter, or one over a shared store (its check may then wait for the store, never past its timeout). */
  limiter: RateLimiter | SharedRateLimiter;
  /**
   * The scope reported on refusal: "global", "listener", "tenant", "client", … Rules are
   * checked in the order given — list them coarse to fine.
   * @default the limiter's name, else "client"
   */
  scope?: string | undefined;
  /**
   * The bucket of a request. Return a constant for a shared budget (global, listener).
   * @default the client key
   */
  key?: ((request: Request, clientKey: string) => string) | undefined;
  /**
   * The requests this rule does not meter: neither charged nor refused by it. For the
   * orchestrator's health probes, which a budget shared with other clients could lock out (a
   * kubelet probes from the node's address, which NAT'd clients often share: a probe refused
   * 429 takes the pod out of service and gets it restarted). Must return a boolean; one that
   * throws (or returns anything else) denies at this rule, as a throwing `key` does.
   */
  skip?: ((request: Request, clientKey: string) => boolean) | undefined;
}

/** Every key of a {@linkcode RateLimitRule}: any other is refused when the guard is built. */
const RULE_KEYS: _KeyList<RateLimitRule> = { limiter: true, scope: true, key: true, skip: true };

/** Options of {@linkcode createKeyedGates}. */
export interface KeyedGatesOptions {
  /** Gate 5: budgets charged all or nothing, coarse to fine. */
  rateLimits?: readonly RateLimitRule[] | undefined;
  /**
   * Gate 6: the per-key in-flight cap. Its lane-wide cap defaults to Infinity here: the
   * guard's concurrency limit (gate 7) is the lane. With `shedWaitMs`, a request over its
   * key's cap waits that long for one of the key's slots (429 after), and leaves the wait at
   * once when its client goes away.
   */
  inFlightPerKey?: InFlightLimiterOptions | undefined;
  /** How the client key is derived: options (trusted proxies, IPv6 prefix) or a function. */
  clientKey?: ClientKeyOptions | ClientKeyFunction | undefined;
  /** Adds the IETF `RateLimit` field to a rate limit's own 429s (not `RateLimit-Policy`: see `rateLimitHeaders()` for that). @default false */
  rateLimitHeaders?: boolean | undefined;
}

/** What the keyed gates decided for one request. */
export type KeyedVerdict =
  | { readonly ok: true; readonly key: string; readonly slot: Slot | undefined }
  | { readonly ok: false; readonly response: Response | undefined };

/** Gates 4 and 5, composed. */
export interface KeyedGates {
  /** Checks the request; synchronous unless it waits for a shared store or for an in-flight slot (a shed wait). */
  check(request: Request, peer: PeerAddress | undefined, now: number): KeyedVerdict | Promise<KeyedVerdict>;
  readonly inFlight: ReturnType<typeof createInFlightLimiter> | undefined;
}

/** The parts of gates 5 and 6, built once from the options (validated here). */
export interface _KeyedParts {
  readonly keyOf: ClientKeyFunction;
  /**
   * `keyOf` is the built-in key function, which reads nothing of its info but `peer`: the
   * request's info is handed to it as it is, not copied into a `{ peer }` a request. A
   * user's function gets only `{ peer }` (the info holds the adapter's internals).
   */
  readonly ownKey: boolean;
  /** Gate 5: charges the request's budgets (a promise when a shared store is asked); undefined without rules. */
  readonly rate: ((request: Request, key: string, now: number) => RateDecision | Promise<RateDecision>) | undefined;
  readonly rateLimitHeaders: boolean;
  /** Gate 6; undefined without `inFlightPerKey`. */
  readonly inFlight: _InFlightLimiter | undefined;
  /**
   * The key and the budgets read nothing of the request (the built-in key without trusted
   * proxies, no rule with its own `key` or `skip`): gates 5 and 6 can run from the head (gate.ts).
   */
  readonly fromHead: boolean;
}

/**
 * The guard's client key function (validated: bad CIDRs throw at startup) and whether it is
 * the built-in one: gates 5 and 6 use it, and a request's `context.key` reads it when neither
 * gate is configured (route-level limits key by it).
 */
export function _guardKey(options: KeyedGatesOptions): Pick<_KeyedParts, "keyOf" | "ownKey"> {
  const keyOf: ClientKeyFunction = typeof options.clientKey === "function"
    ? options.clientKey
    : createClientKey(options.clientKey === undefined ? undefined : _onlyKnown("create guard", _object("create guard", "clientKey", options.clientKey), _CLIENT_KEY_KEYS, "clientKey"));
  return { keyOf, ownKey: typeof options.clientKey !== "function" };
}

/** Validates and builds the keyed gates' parts; undefined when neither gate is configured. */
export function _keyedParts(options: KeyedGatesOptions, sink: EventSink, clock?: Clock, key = _guardKey(options)): _KeyedParts | undefined {
  const rules: readonly RateLimitRule[] = _given(options.rateLimits, []);
  if (!Array.isArray(rules)) {
    throw new TypeError(`Cannot create guard as "rateLimits" must be an array: current value is ${_show(rules)}`);
  }
  const keyOf = key.keyOf;
  const perKey = options.inFlightPerKey === undefined ? undefined : _onlyKnown("create guard", _object("create guard", "inFlightPerKey", options.inFlightPerKey), _IN_FLIGHT_LIMITER_KEYS, "inFlightPerKey");
  if (rules.length === 0 && perKey === undefined) return undefined;
  type Ctx = { request: Request; key: string };
  // Two rules under one name would be one budget in the scoped limiter: said in the guard's terms.
  const names = rules.map((rule) => rule?.scope ?? rule?.limiter?.name ?? "client");
  const twice = names.findIndex((name, i) => names.indexOf(name) !== i);
  if (twice >= 0) {
    throw new TypeError(
      `Cannot create guard as "rateLimits[${twice}].scope" must be distinct (give each rule its own scope or limiter name): current value is ${_show(names[twice])}`,
    );
  }
  // The rules' own functions, checked here: wrapped for the scoped limiter, one that is not a
  // function (a typo) would fail every request closed (429s and faults) instead of at startup.
  rules.forEach((rule, i) => {
    _onlyKnown("create guard", rule, RULE_KEYS, `rateLimits[${i}]`);
    for (const field of ["key", "skip"] as const) {
      const f = rule?.[field];
      if (f !== undefined && typeof f !== "function") {
        throw new TypeError(`Cannot create guard as "rateLimits[${i}].${field}" must be a function: current value is ${_show(f)}`);
      }
    }
  });
  // Built for one rule too: it validates the rules, and `createKeyedGates` uses it.
  const scoped: ScopedLimiter<Ctx> | SharedScopedLimiter<Ctx> | undefined = rules.length === 0 ? undefined : createScopedLimiter<Ctx>({
    scopes: rules.map((rule, i) => {
      const pick = rule.key;
      const skip = rule.skip;
      return {
        name: names[i]!,
        limiter: rule.limiter,
        key: pick === undefined ? (c: Ctx) => c.key : (c: Ctx) => pick(c.request, c.key),
        skip: skip === undefined ? undefined : (c: Ctx) => skip(c.request, c.key),
      };
    }),
    onEvent: sink,
  });
  // The guard's clock unless the options name one: a per-key shed wait runs on it. No overall
  // cap unless named (gate 7 is the concurrency limit); an option given as undefined is not named.
  const inFlight = perKey === undefined ? undefined : _createInFlightLimiter({ ...perKey, overall: perKey.overall === undefined ? Infinity : perKey.overall, clock: perKey.clock === undefined ? clock : perKey.clock, onEvent: sink });
  // One in-memory rule asks its limiter directly; a shared one goes through the scoped take.
  const one = rules.length === 1 && !_isShared(rules[0]!.limiter) ? rules[0]! : undefined;
  const rate = scoped === undefined
    ? undefined
    : one !== undefined
    ? _oneRule(one.limiter as RateLimiter, scoped.scopes[0]!, one.key, one.skip, sink)
    : (request: Request, key: string, now: number) => scoped.take({ request, key }, 1, now);
  const proxies = typeof options.clientKey === "object" ? options.clientKey.trustedProxies : undefined;
  const fromHead = typeof options.clientKey !== "function" && (proxies === undefined || proxies.length === 0) && rules.every((rule) => rule.key === undefined && rule.skip === undefined);
  return { keyOf, ownKey: key.ownKey, rate, rateLimitHeaders: options.rateLimitHeaders === true, inFlight, fromHead };
}

/**
 * Gates 5 (keyed rate limits) and 6 (per-key in-flight cap) around one client key. Refusal
 * events come from the limiters themselves, through `sink`. Fails closed: a key function
 * that throws denies with 429 and a fault event.
 */
export function createKeyedGates(options: KeyedGatesOptions, sink: EventSink): KeyedGates | undefined {
  const parts = _keyedParts(options, sink);
  if (parts === undefined) return undefined;
  const { keyOf, rate, inFlight } = parts;
  const headers = parts.rateLimitHeaders;

  return {
    inFlight,
    check(request, peer, now) {
      let key: string;
      try {
        key = keyOf(request, { peer });
      } catch (error) {
        _emit([sink], { type: "fault", source: "client-key", error, failed: "closed" });
        _emit([sink], { type: "deny", layer: "rate", reason: "limiter-error", status: 429, retryAfterMs: 1000 });
        return { ok: false, response: denyResponse(429, { retryAfterMs: 1000 }) };
      }
      if (rate === undefined) return perKey(request, key);
      const d = rate(request, key, now);
      const after = (d: RateDecision): KeyedVerdict | Promise<KeyedVerdict> =>
        d.allowed ? perKey(request, key) : { ok: false, response: rateLimitedResponse(d, { rateLimitHeaders: headers }) };
      return d instanceof Promise ? d.then(after) : after(d);
    },
  };

  function perKey(request: Request, key: string): KeyedVerdict | Promise<KeyedVerdict> {
      if (inFlight === undefined) return { ok: true, key, slot: undefined };
      // Synchronous unless this request has to wait (its key at its cap, with a shed wait).
      const slot = inFlight.enter(key, request.signal);
      const verdict = (s: Awaited<typeof slot>): KeyedVerdict => {
        if (s.ok) return { ok: true, key, slot: s };
        // "aborted": the client left while waiting; there is nobody to answer.
        return { ok: false, response: s.reason === "aborted" ? undefined : denyResponse(s.status, { retryAfterMs: s.retryAfterMs }) };
      };
      return slot instanceof Promise ? slot.then(verdict) : verdict(slot);
  }
}
