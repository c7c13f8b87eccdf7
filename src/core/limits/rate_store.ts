// The shared-store contract of the keyed limiters (issue 15): what a backend (Redis, Valkey,
// anything) answers, and the store object limiters accept, which bounds every call to the
// backend: a timeout, a cap on calls outstanding, and a circuit breaker with a half-open
// probe. No client library is imported here; `serve-hygiene/redis` supplies a backend.
import type { Clock } from "../clock.ts";
import { systemClock } from "../clock.ts";
import type { EventSink } from "../events.ts";
import { _emit } from "../_emit.ts";
import { _FifoDeadlines } from "./_fifo_deadlines.ts";
import { _durationMs, _given, _options, _positiveInt, _show, type _KeyList } from "../_validate.ts";

/** The algorithm of a budget: the keyed limiters' two. */
export type RateAlgorithm = "fixed-window" | "token-bucket";

/** One budget checked in a store call. Every figure comes from the limiter's configuration. */
export interface RateStoreCheck {
  readonly algorithm: RateAlgorithm;
  /** The limiter's name: budgets of one name (and algorithm) are one budget across instances. */
  readonly limiter: string;
  /** The client key (or a scope's bucket). The backend must not use it raw as a key name. */
  readonly key: string;
  /** Cost units to charge; a positive integer not above `limit`. */
  readonly cost: number;
  /** Fixed window: the budget of a window. Token bucket: the burst. */
  readonly limit: number;
  /** Fixed window: the window. Token bucket: burst × interval (the time to refill). */
  readonly windowMs: number;
  /** Token bucket: the emission interval (1000 / ratePerSecond). Fixed window: `windowMs`. */
  readonly intervalMs: number;
}

/** A backend's answer for one check, decided at the backend's time (as the in-memory limiters would). */
export interface RateStoreResult {
  readonly allowed: boolean;
  readonly retryAfterMs: number;
  readonly remaining: number;
  readonly resetMs: number;
}

/** A backend's answer for one call: one result per check, in order. */
export interface RateStoreReply {
  /** The backend's time the checks were decided at, in milliseconds (diagnostics, tests). */
  readonly now: number;
  readonly results: readonly RateStoreResult[];
}

/**
 * What a shared store must do: check every budget of a call at one time of its own and
 * charge each one only if all admit (atomically, across every instance sharing it). It may
 * be slow or fail; {@linkcode createRateStore} bounds it.
 */
export interface RateStoreBackend {
  take(checks: readonly RateStoreCheck[]): Promise<RateStoreReply>;
}

/**
 * Why a store call gave no answer: it timed out, the backend failed (or answered nonsense),
 * `maxPending` calls were already outstanding (no call was made), or the breaker is open
 * (no call was made: the limiter answers from its insurance limiter).
 */
export type RateStoreFailureReason = "timeout" | "error" | "saturated" | "fallback";

/** A store call that gave no answer. */
export interface RateStoreFailure {
  readonly failure: RateStoreFailureReason;
  readonly error: unknown;
}

/** Options of {@linkcode createRateStore}. */
export interface RateStoreOptions {
  /** The store's name in events and metrics ("redis"). @default undefined */
  name?: string | undefined;
  /**
   * The longest a call may take, in milliseconds; then the limiter fails open or closed as
   * configured. A request never waits longer than this because of the store.
   * @default 50
   */
  timeoutMs?: number | undefined;
  /**
   * The most calls outstanding at the backend (timed-out ones included, until the backend
   * settles them). Past it a call is not made and counts as a failure of that request
   * ("saturated"): a slow backend never accumulates a queue.
   * @default 256
   */
  maxPending?: number | undefined;
  /**
   * Consecutive failed calls (timeouts, errors) after which limiters fall back to their
   * insurance limiter. A hung backend holds no more than `maxPending` calls (a saturated call
   * is refused but not counted), so a value above it means a hung backend never makes the
   * store fall back. @default 5, or `maxPending` when lower
   */
  fallbackAfter?: number | undefined;
  /** While falling back, one call (a half-open probe) is let through this often; its success ends the fallback. @default 1000 */
  probeIntervalMs?: number | undefined;
  /** Time source of the timeouts and the probe interval. @default systemClock */
  clock?: Clock | undefined;
  /** Receives `{ type: "store", state: "fallback" | "recovered" }` events. @default undefined */
  onEvent?: EventSink | undefined;
}

/** A shared store as the keyed limiters use it: a backend behind a timeout, a pending cap and a breaker. */
export interface RateStore {
  readonly name: string | undefined;
  readonly timeoutMs: number;
  readonly maxPending: number;
  /** Calls outstanding at the backend now. */
  readonly pending: number;
  /** "ok": calls reach the backend; "fallback": the breaker is open. */
  readonly state: "ok" | "fallback";
  /**
   * Sends the checks to the backend. Returns a failure at once when no call is made
   * (`"saturated"`, `"fallback"`); otherwise a promise that settles within `timeoutMs` with
   * the backend's reply or a failure. Never rejects.
   */
  call(checks: readonly RateStoreCheck[]): RateStoreFailure | Promise<RateStoreReply | RateStoreFailure>;
}

const FALLBACK: RateStoreFailure = Object.freeze({ failure: "fallback", error: undefined });
const SATURATED: RateStoreFailure = Object.freeze({ failure: "saturated", error: undefined });

/** A reply that fits the call: one result of finite figures per check. */
function _fits(reply: unknown, count: number): reply is RateStoreReply {
  const r = reply as RateStoreReply | undefined;
  if (typeof r !== "object" || r === null || !Array.isArray(r.results) || r.results.length !== count) return false;
  for (const x of r.results) {
    if (typeof x?.allowed !== "boolean") return false;
    if (!(Number.isFinite(x.retryAfterMs) && Number.isFinite(x.remaining) && Number.isFinite(x.resetMs))) return false;
  }
  return true;
}

/** Every option of {@linkcode RateStoreOptions}: any other key is refused (_validate.ts `_onlyKnown`). */
const RATE_STORE_KEYS: _KeyList<RateStoreOptions> = { name: true, timeoutMs: true, maxPending: true, fallbackAfter: true, probeIntervalMs: true, clock: true, onEvent: true };

/**
 * Creates a store over a backend: every call is bounded by `timeoutMs` and by `maxPending`
 * calls outstanding, and after `fallbackAfter` consecutive failures the store reports
 * `"fallback"` without calling (its limiters answer from their in-memory insurance limiter)
 * until a half-open probe — one call let through every `probeIntervalMs` — succeeds. Each
 * fallback and recovery is a `store` event. `serve-hygiene/redis`'s `createRedisStore`
 * builds one over Redis; a backend of your own (any engine that can check and charge
 * budgets atomically) gets the same bounds here.
 *
 * @example A backend that never answers: the call fails at the timeout, never later
 * ```ts
 * import { createManualClock, createRateStore } from "serve-hygiene";
 * const clock = createManualClock();
 * const store = createRateStore({ take: () => new Promise(() => {}) }, { timeoutMs: 50, clock });
 * const call = store.call([{ algorithm: "fixed-window", limiter: "ip", key: "k", cost: 1, limit: 10, windowMs: 1000, intervalMs: 1000 }]);
 * clock.advance(50);
 * const answer = await call;
 * console.assert("failure" in answer && answer.failure === "timeout");
 * ```
 */
export function createRateStore(backend: RateStoreBackend, options?: RateStoreOptions): RateStore {
  const what = "create rate store";
  if (typeof backend?.take !== "function") {
    throw new TypeError(`Cannot ${what} as "backend" must have a take(checks) method: current value is ${_show(backend)}`);
  }
  const o = _options(what, options, RATE_STORE_KEYS);
  if (o.name !== undefined && typeof o.name !== "string") {
    throw new TypeError(`Cannot ${what} as "name" must be a string: current value is ${_show(o.name)}`);
  }
  const name = o.name;
  const timeoutMs = _durationMs(what, "timeoutMs", _given(o.timeoutMs, 50));
  const maxPending = _positiveInt(what, "maxPending", _given(o.maxPending, 256));
  // A hung backend holds at most maxPending calls, whose timeouts are the failures that count
  // (a saturated call is refused at once but not counted: a burst on a healthy backend is not
  // a fault): with fewer than fallbackAfter of them the store would never fall back.
  const fallbackAfter = _positiveInt(what, "fallbackAfter", _given(o.fallbackAfter, Math.min(5, maxPending)));
  const probeIntervalMs = _durationMs(what, "probeIntervalMs", _given(o.probeIntervalMs, 1000));
  const clock = o.clock ?? systemClock;
  const sink = o.onEvent;

  const deadlines = new _FifoDeadlines(clock, timeoutMs);
  let pending = 0;
  let failures = 0;
  let state: "ok" | "fallback" = "ok";
  let openedAt = 0;
  let probing = false;

  // `charged`: the reply admitted every check, so the backend wrote (a call charges all or
  // none). A reply that only denies proves less: a Redis that refuses writes (a demoted
  // replica's READONLY, an OOM under noeviction) still answers it, and counted as health such
  // replies kept resetting the failures while every other call failed — one first denial of an
  // abusive key in five held the store "ok", and legitimate requests failed closed throughout
  // (a review). So it neither resets the count nor, as a probe, ends the fallback; a probe that
  // only denies lets the next call probe at once.
  const outcome = (ok: boolean, probe: boolean, error: unknown, charged: boolean) => {
    if (probe) {
      probing = false;
      if (!ok) openedAt = clock.now();
      else if (!charged) openedAt = clock.now() - probeIntervalMs;
      else {
        state = "ok";
        failures = 0;
        _emit([sink], { type: "store", state: "recovered", store: name });
      }
      return;
    }
    // Late answers of calls sent before the breaker opened do not close it: only a probe does.
    if (state === "fallback") return;
    if (ok) {
      if (charged) failures = 0;
    } else if (++failures >= fallbackAfter) {
      state = "fallback";
      openedAt = clock.now();
      _emit([sink], { type: "store", state: "fallback", store: name, failures, error });
    }
  };

  const send = (checks: readonly RateStoreCheck[], probe: boolean): Promise<RateStoreReply | RateStoreFailure> => {
    pending++;
    let reply: Promise<RateStoreReply>;
    try {
      reply = backend.take(checks);
    } catch (error) {
      reply = Promise.reject(error);
    }
    return new Promise((resolve) => {
      let done = false;
      const timer = deadlines.add(() => {
        if (done) return;
        done = true;
        const error = new DOMException(`The rate store did not answer within ${timeoutMs} ms`, "TimeoutError");
        outcome(false, probe, error, false);
        resolve({ failure: "timeout", error });
      });
      const settle = (answer: RateStoreReply | RateStoreFailure) => {
        pending--;
        if (done) return;
        done = true;
        timer.cancel();
        const ok = !("failure" in answer);
        outcome(ok, probe, (answer as RateStoreFailure).error, ok && (answer as RateStoreReply).results.every((r) => r.allowed));
        resolve(answer);
      };
      Promise.resolve(reply).then(
        (r) => settle(_fits(r, checks.length) ? r : { failure: "error", error: new TypeError(`The rate store's reply did not fit the call: ${_show(r)}`) }),
        (error: unknown) => settle({ failure: "error", error }),
      );
    });
  };

  return {
    name,
    timeoutMs,
    maxPending,
    get pending() {
      return pending;
    },
    get state() {
      return state;
    },
    call(checks) {
      if (state === "fallback") {
        // Half-open: one probe at a time, once the interval has passed, and only with room.
        if (probing || clock.now() - openedAt < probeIntervalMs || pending >= maxPending) return FALLBACK;
        probing = true;
        return send(checks, true);
      }
      if (pending >= maxPending) return SATURATED;
      return send(checks, false);
    },
  };
}
