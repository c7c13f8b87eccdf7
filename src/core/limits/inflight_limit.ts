import type { Clock } from "../clock.ts";
import { systemClock } from "../clock.ts";
import { createConcurrencyLimit } from "../overload/concurrency_limit.ts";
import type { Permit, Refusal } from "../overload/permit.ts";
import { _hasCode, HygieneError } from "../errors.ts";
import type { EventSink } from "../events.ts";
import type { SizeGauge } from "../size_gauge.ts";
import { _emit } from "../_emit.ts";
import { _durationMs, _options, _positiveInt, _positiveIntOrInfinity, _given, type _KeyList } from "../_validate.ts";
import { type _Count, _KeyCounts } from "./_key_counts.ts";
import { _KeyWaits } from "./_key_waits.ts";
import { _label } from "./_rate.ts";

/**
 * The bounded shed wait DESIGN.md names for the in-flight lane, in milliseconds. Not the
 * default (the default never waits); users opt in with `shedWaitMs: 250`. Internal: not exported
 * by the package.
 */
export const DEFAULT_INFLIGHT_SHED_WAIT_MS = 250;

/** Options of {@linkcode createInFlightLimiter}. */
export interface InFlightLimiterOptions {
  /**
   * Requests one key may have in flight at once. 0 is clamped to 1. With a shed wait, as many
   * more may wait for one of the key's slots.
   * @default 16
   */
  perKey?: number | undefined;
  /** Requests the whole lane may have in flight at once; `Infinity` uncaps it. 0 is clamped to 1. @default 1024 */
  overall?: number | undefined;
  /**
   * How long a request may wait, in milliseconds: a request over its key's cap for one of the
   * key's slots (then 429 `"peer-busy"`), and a request under it for a lane permit (then 503
   * `"busy"`); each wait is bounded by this. 0 never waits: refusals are immediate and every
   * answer is synchronous. DESIGN.md's bounded wait is 250 ms.
   * @default 0
   */
  shedWaitMs?: number | undefined;
  /**
   * The most keys held at once. When full, a key whose count is back to 0 is dropped first
   * (amortised O(1): such keys are remembered, never searched for); an unseen key is refused
   * as "busy" only if every held key has work in flight.
   * @default 4096
   */
  maxKeys?: number | undefined;
  /** The Retry-After hint of a refusal, in milliseconds. @default 1000 */
  retryAfterMs?: number | undefined;
  /** Time source of the shed waits. @default systemClock */
  clock?: Clock | undefined;
  /** Class label for events. @default undefined */
  name?: string | undefined;
  /** Receives deny and fault events. @default undefined */
  onEvent?: EventSink | undefined;
}

/** A held in-flight slot. Release it (or dispose it) when the work settles; twice is a no-op. */
export interface Slot extends Disposable {
  readonly ok: true;
  release(): void;
}

/**
 * Why no slot was handed out: the key is at its own cap (`"peer-busy"`, answer 429), the
 * lane stayed full or the key table is full (`"busy"`, 503), the caller's signal fired
 * while waiting (`"aborted"`: nobody to answer), or the limiter failed closed
 * (`"limiter-error"`, 503).
 */
export interface InFlightRefusal {
  readonly ok: false;
  readonly reason: "peer-busy" | "busy" | "aborted" | "limiter-error";
  readonly status: 429 | 503;
  readonly retryAfterMs: number;
}

/** A per-key in-flight cap under a lane-wide one (gate 6 of DESIGN.md). */
export interface InFlightLimiter {
  readonly perKey: number;
  readonly overall: number;
  readonly shedWaitMs: number;
  /** Lane permits held now. */
  readonly overallInFlight: number;
  /** Requests waiting now: for one of their key's slots, or for a lane permit. */
  readonly waiting: number;
  /** Keys with work in flight or waiting, and the cap. */
  readonly size: SizeGauge;
  /** The requests of `key` in flight or waiting for the lane. */
  inFlight(key: string): number;
  /** A slot now, or a refusal now. Never waits. */
  tryAcquire(key: string): Slot | InFlightRefusal;
  /** A slot now or within the shed wait, or a refusal; an aborted `signal` withdraws the wait. */
  acquire(key: string, signal?: AbortSignal): Promise<Slot | InFlightRefusal>;
  /**
   * As `acquire`, but answers synchronously whenever the answer is known now (a free slot, a
   * refusal without a wait): only a request that has to wait gets a Promise.
   */
  enter(key: string, signal?: AbortSignal): Slot | InFlightRefusal | Promise<Slot | InFlightRefusal>;
}

const CODE = "PEER_BUSY";

/**
 * A refusal because the client already has its share of work in flight.
 *
 * @example
 * ```ts
 * import { isPeerBusyError, PeerBusyError } from "serve-hygiene";
 * const error = new PeerBusyError({ retryAfterMs: 1000, limit: 16 });
 * console.assert(isPeerBusyError(error) && error.limit === 16);
 * ```
 */
export class PeerBusyError extends HygieneError {
  declare readonly code: typeof CODE;
  readonly retryAfterMs: number;
  /** The per-key cap that was reached. */
  readonly limit: number;
  constructor(data: { retryAfterMs: number; limit: number }, options?: { cause?: unknown }) {
    super(CODE, `Peer busy: ${data.limit} requests already in flight`, options);
    this.name = new.target === PeerBusyError ? "PeerBusyError" : new.target.name;
    this.retryAfterMs = data.retryAfterMs;
    this.limit = data.limit;
  }
}

/**
 * Whether `error` is a {@linkcode PeerBusyError}, from this copy of the package or another.
 *
 * @example
 * ```ts
 * import { isPeerBusyError } from "serve-hygiene";
 * console.assert(!isPeerBusyError(new Error("x")));
 * ```
 */
export function isPeerBusyError(error: unknown): error is PeerBusyError {
  return _hasCode<PeerBusyError>(error, CODE, "retryAfterMs");
}

function _clampCap(what: string, field: string, value: number): number {
  return value === 0 ? 1 : _positiveIntOrInfinity(what, field, value);
}

/** Every option of {@linkcode InFlightLimiterOptions}: any other key is refused (_validate.ts `_onlyKnown`). */
export const _IN_FLIGHT_LIMITER_KEYS: _KeyList<InFlightLimiterOptions> = { perKey: true, overall: true, shedWaitMs: true, maxKeys: true, retryAfterMs: true, clock: true, name: true, onEvent: true };

/**
 * Creates a per-key in-flight limiter. A key's slot is reserved before it waits for a lane
 * permit, so a key at its cap never touches the lane. Without a shed wait, a key at its cap
 * is refused at once (`"peer-busy"`). With `shedWaitMs`, a request over its key's cap waits
 * up to `shedWaitMs` for one of the key's slots: a released slot goes to the newest waiter
 * (LIFO, as the lane serves); at most `perKey` wait per key (a new waiter past that pushes
 * out the oldest, refused at once); a waiter still waiting when the time is up is refused
 * `"peer-busy"` (429). A key under its cap that finds the lane full waits up to `shedWaitMs`
 * (newest first, via {@linkcode createConcurrencyLimit}) and is then refused (`"busy"`). A
 * waiter whose signal aborts leaves its queue at once (`"aborted"`). The reservation is
 * returned when the slot is released, when the request is refused, and when its signal
 * aborts the wait. A key whose count returns to 0 leaves the size gauge at once, and the
 * table's memory when the table is full and room is needed.
 *
 * Fails closed: an internal error (a broken signal, corrupt state) refuses with
 * `"limiter-error"`, returns any reservation, emits a fault event, and never throws.
 *
 * @example
 * ```ts
 * import { createInFlightLimiter } from "serve-hygiene";
 * const limiter = createInFlightLimiter({ perKey: 1 });
 * const slot = limiter.tryAcquire("10.0.0.1");
 * const second = limiter.tryAcquire("10.0.0.1");
 * console.assert(slot.ok && !second.ok && second.reason === "peer-busy");
 * if (slot.ok) slot.release();
 * console.assert(limiter.inFlight("10.0.0.1") === 0 && limiter.size.value === 0);
 * ```
 */
export function createInFlightLimiter(options?: InFlightLimiterOptions): InFlightLimiter {
  return _createInFlightLimiter(options);
}

/** The in-flight limiter as the guard's per-key gate uses it. Internal. */
export interface _InFlightLimiter extends InFlightLimiter {
  /** Ends every wait for a key's slot now, each answered as its client's leaving would be ("aborted"): the guard's forced drain. */
  _refuseWaiting(): void;
}

/** {@linkcode createInFlightLimiter} with what the guard's per-key gate needs of it (internal). */
export function _createInFlightLimiter(options?: InFlightLimiterOptions): _InFlightLimiter {
  const what = "create in-flight limiter";
  const o = _options(what, options, _IN_FLIGHT_LIMITER_KEYS);
  const perKey = _clampCap(what, "perKey", _given(o.perKey, 16));
  const overall = _clampCap(what, "overall", _given(o.overall, 1024));
  const shedWaitMs = _durationMs(what, "shedWaitMs", _given(o.shedWaitMs, 0), { zero: true });
  const maxKeys = _positiveInt(what, "maxKeys", _given(o.maxKeys, 4096));
  const retryAfterMs = _durationMs(what, "retryAfterMs", _given(o.retryAfterMs, 1000));
  const name = _label(what, o.name);
  const sink = o.onEvent;
  const clock = o.clock ?? systemClock;
  // The lane waits up to shedWaitMs, as documented: no shorter bound once its queue stands.
  const lane = createConcurrencyLimit({ limit: overall, shedWaitMs, standingWaitMs: shedWaitMs, retryAfterMs, clock });
  // Without an overall cap (the guard's per-key gate: the concurrency limit is gate 7) there is
  // no lane to wait for: a slot is counted, and holds no permit of its own.
  const unbounded = overall === Infinity;
  let untracked = 0;
  const untrack = () => void untracked--;
  const uncapped: Permit = { ok: true, release: untrack, complete: untrack, [Symbol.dispose]: untrack };
  const counted = (box: _Count): Slot => (untracked++, slot(box, uncapped));
  const counts = new _KeyCounts(maxKeys);
  const refusal = (reason: InFlightRefusal["reason"], status: 429 | 503): InFlightRefusal =>
    Object.freeze({ ok: false, reason, status, retryAfterMs });
  const refusals = { "peer-busy": refusal("peer-busy", 429), busy: refusal("busy", 503) };
  const aborted = refusal("aborted", 503);
  const waits = new _KeyWaits(clock, shedWaitMs, perKey);

  const deny = (r: InFlightRefusal): InFlightRefusal => {
    if (sink === undefined) return r;
    const limiterClass = name === undefined ? {} : { limiterClass: name };
    _emit([sink], { type: "deny", layer: "peer", reason: r.reason, status: r.status, retryAfterMs, ...limiterClass });
    return r;
  };
  // A key slot that is given back goes to the key's newest waiter, if any, else back to the count.
  const giveBack = (box: _Count) => {
    if (!waits.handOver(box)) counts.remove(box);
  };
  const fault = (error: unknown, box: _Count | undefined): InFlightRefusal => {
    if (box !== undefined) giveBack(box);
    _emit([sink], { type: "fault", source: "inflight-limiter", failed: "closed", error });
    return deny(refusal("limiter-error", 503));
  };

  const slot = (box: _Count, permit: Permit): Slot => new _Slot(box, permit, giveBack);
  const settle = (box: _Count, result: Permit | Refusal): Slot | InFlightRefusal => {
    if (result.ok) return slot(box, result);
    giveBack(box);
    return result.reason === "aborted" ? aborted : deny(refusals.busy);
  };
  // The key's slot is held: now the lane.
  const toLane = (box: _Count, signal: AbortSignal | undefined): Slot | InFlightRefusal | Promise<Slot | InFlightRefusal> => {
    if (unbounded) return counted(box);
    try {
      const now = lane.tryAcquire();
      if (now.ok || shedWaitMs === 0) return settle(box, now);
      return lane.acquire(signal).then(
        (result) => settle(box, result),
        (error: unknown) => fault(error, box),
      );
    } catch (error) {
      return fault(error, box);
    }
  };
  const enter = (key: string, signal: AbortSignal | undefined): Slot | InFlightRefusal | Promise<Slot | InFlightRefusal> => {
    try {
      if (signal?.aborted) return aborted;
      const added = counts.add(key, perKey);
      if (added === "busy" || (added === "peer-busy" && shedWaitMs === 0)) return deny(refusals[added]);
      if (added === "peer-busy") {
        // Over the key's cap with a shed wait: wait for one of the key's own slots.
        const box = counts.box(key)!;
        return waits.wait(box, signal, () => toLane(box, signal), (end) => (end === "aborted" ? aborted : deny(refusals[end])));
      }
      return toLane(added, signal);
    } catch (error) {
      return fault(error, undefined);
    }
  };

  return {
    perKey,
    overall,
    shedWaitMs,
    get overallInFlight() {
      return unbounded ? untracked : lane.inFlight;
    },
    get waiting() {
      return lane.waiting + waits.waiting;
    },
    size: counts.gauge,
    inFlight: (key) => counts.count(key),
    tryAcquire(key) {
      let box: _Count | undefined;
      try {
        const added = counts.add(key, perKey);
        if (typeof added === "string") return deny(refusals[added]);
        box = added;
        if (unbounded) return counted(box);
        return settle(box, lane.tryAcquire());
      } catch (error) {
        return fault(error, box);
      }
    },
    acquire: (key, signal) => Promise.resolve(enter(key, signal)),
    enter,
    _refuseWaiting: () => waits.endAll("aborted"),
  };
}

// A held slot: one object a request (its methods on the prototype, no closures); released once.
class _Slot implements Slot {
  readonly ok = true as const;
  #box: _Count | undefined;
  readonly #permit: Permit;
  readonly #giveBack: (box: _Count) => void;

  constructor(box: _Count, permit: Permit, giveBack: (box: _Count) => void) {
    this.#box = box;
    this.#permit = permit;
    this.#giveBack = giveBack;
  }

  release(): void {
    const box = this.#box;
    if (box === undefined) return;
    this.#box = undefined;
    this.#permit.release();
    this.#giveBack(box);
  }

  [Symbol.dispose](): void {
    this.release();
  }
}
