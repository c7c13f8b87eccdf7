import type { Clock } from "./clock.ts";
import { createConcurrencyLimit, type Permit, type Refusal } from "./concurrency_limit.ts";
import { _hasCode, HygieneError } from "./errors.ts";
import type { EventSink } from "./events.ts";
import type { SizeGauge } from "./size_gauge.ts";
import { _emit } from "./_emit.ts";
import { _durationMs, _options, _positiveInt, _positiveIntOrInfinity, _given } from "./_validate.ts";
import { type _Count, _KeyCounts } from "./_key_counts.ts";
import { _label } from "./_rate.ts";

/**
 * The bounded shed wait DESIGN.md names for the in-flight lane, in milliseconds. Not the
 * default (the default never waits): opt in with `shedWaitMs: DEFAULT_INFLIGHT_SHED_WAIT_MS`.
 */
export const DEFAULT_INFLIGHT_SHED_WAIT_MS = 250;

/** Options of {@linkcode createInFlightLimiter}. */
export interface InFlightLimiterOptions {
  /** Requests one key may have in flight (or waiting) at once. 0 is clamped to 1. @default 16 */
  perKey?: number;
  /** Requests the whole lane may have in flight at once; `Infinity` uncaps it. 0 is clamped to 1. @default 1024 */
  overall?: number;
  /**
   * How long a key under its own cap may wait for a lane permit, in milliseconds. 0 never
   * waits. See {@linkcode DEFAULT_INFLIGHT_SHED_WAIT_MS}.
   * @default 0
   */
  shedWaitMs?: number;
  /**
   * The most keys held at once. When full, keys whose count is back to 0 are swept first;
   * an unseen key is refused as "busy" only if every held key has work in flight.
   * @default 4096
   */
  maxKeys?: number;
  /** The Retry-After hint of a refusal, in milliseconds. @default 1000 */
  retryAfterMs?: number;
  /** Time source of the shed wait. @default systemClock */
  clock?: Clock;
  /** Class label for events. @default undefined */
  name?: string;
  /** Receives deny and fault events. @default undefined */
  onEvent?: EventSink;
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

/** A per-key in-flight cap under a lane-wide one (gate 5 of DESIGN.md). */
export interface InFlightLimiter {
  readonly perKey: number;
  readonly overall: number;
  readonly shedWaitMs: number;
  /** Lane permits held now. */
  readonly overallInFlight: number;
  /** Requests waiting for a lane permit now. */
  readonly waiting: number;
  /** Keys with work in flight or waiting, and the cap. */
  readonly size: SizeGauge;
  /** The requests of `key` in flight or waiting for the lane. */
  inFlight(key: string): number;
  /** A slot now, or a refusal now. Never waits. */
  tryAcquire(key: string): Slot | InFlightRefusal;
  /** A slot now or within the shed wait, or a refusal; an aborted `signal` withdraws the wait. */
  acquire(key: string, signal?: AbortSignal): Promise<Slot | InFlightRefusal>;
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
  readonly retryAfterMs: number;
  /** The per-key cap that was reached. */
  readonly limit: number;
  constructor(data: { retryAfterMs: number; limit: number }, options?: { cause?: unknown }) {
    super(CODE, `Peer busy: ${data.limit} requests already in flight`, options);
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
  return _hasCode<PeerBusyError>(error, CODE);
}

function _clampCap(what: string, field: string, value: number): number {
  return value === 0 ? 1 : _positiveIntOrInfinity(what, field, value);
}

/**
 * Creates a per-key in-flight limiter. A key's slot is reserved before it waits for a lane
 * permit, so a key at its cap is refused at once (`"peer-busy"`) without touching the lane;
 * a key under its cap that finds the lane full waits up to `shedWaitMs` (newest first, via
 * {@linkcode createConcurrencyLimit}) and is then refused (`"busy"`). The reservation is
 * returned when the slot is released, when the request is refused, and when its signal
 * aborts the wait. A key whose count returns to 0 leaves the size gauge at once, and the
 * table's memory in the sweep that runs when the table is full.
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
  const what = "create in-flight limiter";
  const o = _options(what, options);
  const perKey = _clampCap(what, "perKey", _given(o.perKey, 16));
  const overall = _clampCap(what, "overall", _given(o.overall, 1024));
  const shedWaitMs = _durationMs(what, "shedWaitMs", _given(o.shedWaitMs, 0), { zero: true });
  const maxKeys = _positiveInt(what, "maxKeys", _given(o.maxKeys, 4096));
  const retryAfterMs = _durationMs(what, "retryAfterMs", _given(o.retryAfterMs, 1000));
  const name = _label(what, o.name);
  const sink = o.onEvent;
  const lane = createConcurrencyLimit({ limit: overall, shedWaitMs, retryAfterMs, ...(o.clock ? { clock: o.clock } : {}) });
  const counts = new _KeyCounts(maxKeys);
  const refusal = (reason: InFlightRefusal["reason"], status: 429 | 503): InFlightRefusal =>
    Object.freeze({ ok: false, reason, status, retryAfterMs });
  const refusals = { "peer-busy": refusal("peer-busy", 429), busy: refusal("busy", 503) };
  const aborted = refusal("aborted", 503);

  const deny = (r: InFlightRefusal): InFlightRefusal => {
    if (sink === undefined) return r;
    const limiterClass = name === undefined ? {} : { limiterClass: name };
    _emit([sink], { type: "deny", layer: "peer", reason: r.reason, status: r.status, retryAfterMs, ...limiterClass });
    return r;
  };
  const fault = (error: unknown, box: _Count | undefined): InFlightRefusal => {
    if (box !== undefined) counts.remove(box);
    _emit([sink], { type: "fault", source: "inflight-limiter", failed: "closed", error });
    return deny(refusal("limiter-error", 503));
  };

  const slot = (box: _Count, permit: Permit): Slot => {
    let held = true;
    const release = () => {
      if (!held) return;
      held = false;
      counts.remove(box);
      permit.release();
    };
    return { ok: true, release, [Symbol.dispose]: release };
  };
  const settle = (box: _Count, result: Permit | Refusal): Slot | InFlightRefusal => {
    if (result.ok) return slot(box, result);
    counts.remove(box);
    return result.reason === "aborted" ? aborted : deny(refusals.busy);
  };

  return {
    perKey,
    overall,
    shedWaitMs,
    get overallInFlight() {
      return lane.inFlight;
    },
    get waiting() {
      return lane.waiting;
    },
    size: counts.gauge,
    inFlight: (key) => counts.count(key),
    tryAcquire(key) {
      let box: _Count | undefined;
      try {
        const added = counts.add(key, perKey);
        if (typeof added === "string") return deny(refusals[added]);
        box = added;
        return settle(box, lane.tryAcquire());
      } catch (error) {
        return fault(error, box);
      }
    },
    acquire(key, signal) {
      let box: _Count | undefined;
      try {
        if (signal?.aborted) return Promise.resolve(aborted);
        const added = counts.add(key, perKey);
        if (typeof added === "string") return Promise.resolve(deny(refusals[added]));
        const held = (box = added);
        const now = lane.tryAcquire();
        if (now.ok || shedWaitMs === 0) return Promise.resolve(settle(held, now));
        return lane.acquire(signal).then(
          (result) => settle(held, result),
          (error: unknown) => fault(error, held),
        );
      } catch (error) {
        return Promise.resolve(fault(error, box));
      }
    },
  };
}
