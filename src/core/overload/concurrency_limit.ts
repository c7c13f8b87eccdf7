import type { Clock, TimerHandle } from "../clock.ts";
import { systemClock } from "../clock.ts";
import { _durationMs, _options, _positiveInt, _positiveIntOrInfinity, _given } from "../_validate.ts";

/** Options of {@linkcode createConcurrencyLimit}. */
export interface ConcurrencyLimitOptions {
  /** Permits: work that may run at once. `Infinity` means uncapped (counted, never refused). */
  limit: number;
  /**
   * How long a request may wait for a permit before it is shed, in milliseconds. 0 means
   * never wait: a request that finds no permit is refused at once. Waiters are served
   * newest first (LIFO): under sustained overload the freshest requests are worth serving.
   * @default 0
   */
  shedWaitMs?: number;
  /**
   * The most requests that may wait at once; a new waiter past it pushes out the oldest.
   * @default the limit, or 1024 when the limit is Infinity
   */
  maxWaiting?: number;
  /** The Retry-After hint of a refusal, in milliseconds. @default 1000 */
  retryAfterMs?: number;
  /** @default systemClock */
  clock?: Clock;
}

/** A held permit. Release it (or dispose it) exactly when the work ends; releasing twice is a no-op. */
export interface Permit extends Disposable {
  readonly ok: true;
  release(): void;
}

/** Why no permit was handed out. */
export interface Refusal {
  readonly ok: false;
  /** "shed": none free (in time); "aborted": the waiter's signal fired first. */
  readonly reason: "shed" | "aborted";
  readonly retryAfterMs: number;
}

/** Global in-flight permits with load shedding (gate 7 of DESIGN.md). */
export interface ConcurrencyLimit {
  readonly limit: number;
  readonly shedWaitMs: number;
  /** Permits held now. Exact: every permit is released once, when its work settles. */
  readonly inFlight: number;
  /** Requests waiting for a permit now. */
  readonly waiting: number;
  /** A permit now, or a refusal now. Never waits. */
  tryAcquire(): Permit | Refusal;
  /**
   * A permit now, or within `shedWaitMs` (newest waiter first), or a refusal. An aborted
   * `signal` withdraws the waiter.
   */
  acquire(signal?: AbortSignal): Promise<Permit | Refusal>;
  /** Settles the next time no permit is held (at once if none is). */
  idle(): Promise<void>;
}

interface _Waiter {
  resolve(result: Permit | Refusal): void;
  timer: TimerHandle | undefined;
  detach: (() => void) | undefined;
}

/**
 * Creates a concurrency limit: N permits, refusal at once when none is free (or after a
 * bounded, LIFO shed wait), never an unbounded queue.
 *
 * @example Shedding the request past the limit
 * ```ts
 * import { createConcurrencyLimit } from "serve-hygiene";
 * const limit = createConcurrencyLimit({ limit: 1 });
 * const first = limit.tryAcquire();
 * const second = limit.tryAcquire();
 * console.assert(first.ok && !second.ok && second.reason === "shed");
 * if (first.ok) first.release();
 * console.assert(limit.inFlight === 0);
 * ```
 */
export function createConcurrencyLimit(options: ConcurrencyLimitOptions): ConcurrencyLimit {
  const what = "create concurrency limit";
  const o = _options(what, options);
  const limit = _positiveIntOrInfinity(what, "limit", o.limit);
  const shedWaitMs = _durationMs(what, "shedWaitMs", _given(o.shedWaitMs, 0), { zero: true });
  const maxWaiting = _positiveInt(what, "maxWaiting", _given(o.maxWaiting, (limit === Infinity ? 1024 : limit)));
  const retryAfterMs = _durationMs(what, "retryAfterMs", _given(o.retryAfterMs, 1000));
  const clock = o.clock ?? systemClock;

  const shed: Refusal = Object.freeze({ ok: false, reason: "shed", retryAfterMs });
  const aborted: Refusal = Object.freeze({ ok: false, reason: "aborted", retryAfterMs });
  const waiters: _Waiter[] = []; // newest last
  let idleWaiters: (() => void)[] = [];
  let inFlight = 0;

  const settle = (w: _Waiter, result: Permit | Refusal) => {
    w.timer?.cancel();
    w.detach?.();
    w.resolve(result);
  };

  const release = () => {
    const next = waiters.pop(); // LIFO: the freshest waiter takes the permit over
    if (next !== undefined) {
      settle(next, permit());
      return;
    }
    inFlight--;
    if (inFlight === 0 && idleWaiters.length > 0) {
      const resolved = idleWaiters;
      idleWaiters = [];
      for (const resolve of resolved) resolve();
    }
  };

  // The permit is handed over, not re-counted: a waiter taking a released permit leaves
  // inFlight unchanged.
  const permit = (): Permit => {
    let held = true;
    const free = () => {
      if (!held) return;
      held = false;
      release();
    };
    return { ok: true, release: free, [Symbol.dispose]: free };
  };

  const tryAcquire = (): Permit | Refusal => {
    if (inFlight >= limit) return shed;
    inFlight++;
    return permit();
  };

  return {
    limit,
    shedWaitMs,
    get inFlight() {
      return inFlight;
    },
    get waiting() {
      return waiters.length;
    },
    tryAcquire,
    acquire(signal) {
      const now = tryAcquire();
      if (now.ok || shedWaitMs === 0) return Promise.resolve(now);
      if (signal?.aborted) return Promise.resolve(aborted);
      return new Promise((resolve) => {
        const w: _Waiter = { resolve, timer: undefined, detach: undefined };
        const leave = (result: Refusal) => {
          const i = waiters.indexOf(w);
          if (i !== -1) {
            waiters.splice(i, 1);
            settle(w, result);
          }
        };
        w.timer = clock.setTimeout(() => leave(shed), shedWaitMs);
        if (signal !== undefined) {
          const onAbort = () => leave(aborted);
          signal.addEventListener("abort", onAbort, { once: true });
          w.detach = () => signal.removeEventListener("abort", onAbort);
        }
        waiters.push(w);
        if (waiters.length > maxWaiting) settle(waiters.shift()!, shed);
      });
    },
    idle() {
      return inFlight === 0 ? Promise.resolve() : new Promise((resolve) => idleWaiters.push(resolve));
    },
  };
}
