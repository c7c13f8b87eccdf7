// One gate of the request path (DESIGN.md "The request path"): a small object that reads
// only the state it owns and answers pass, a refusal, or — when it has to wait (a shed wait)
// — a promise of either. The guard runs the gates of one list in order; the first refusal
// ends the request there, and the guard alone emits its deny event and builds its answer.
import type { DenyLayer } from "../events.ts";
import type { _Admission } from "../request/admission.ts";

/** A gate let the request through. */
export const PASS = undefined;

/** Why a gate refused a request: what the deny event and the answer are made of. */
export interface GateRefusal {
  /** Why, within the gate's layer: "shed", "busy", "over-cap", "malformed-length", … */
  readonly reason: string;
  readonly status: number;
  /** Sent as `Retry-After`. */
  readonly retryAfterMs?: number;
  /** Adds `Connection: close`. */
  readonly close?: boolean;
  /** The answer, when the gate's own refusal carries more than the generic one (RateLimit fields). */
  readonly response?: Response;
  /** The gate's limiter already emitted the deny event (with its scope and class). */
  readonly reported?: boolean;
  /** Reported under this layer rather than the refusing gate's (a forced drain's refusal of a waiter). */
  readonly layer?: DenyLayer;
}

/** A forced drain's refusal: what every request still waiting or running is answered. */
export const _FORCED: GateRefusal = Object.freeze({ reason: "forced", status: 503, close: true, layer: "draining" });

/** What a gate answers now: `PASS` (undefined) or a refusal; `admit` may instead return a promise(-like) of it. */
export type GateVerdict = GateRefusal | undefined;

/** One gate of the list. */
export interface Gate {
  /** The layer a refusal of this gate is reported under. */
  readonly layer: DenyLayer;
  /** Process-wide gates (draining, memory, load, concurrency) never refuse `exempt` requests. */
  readonly processWide: boolean;
  /**
   * `admit` reads nothing of `admission.request` (Node's head path runs such gates before the
   * Request is built): the adapter's info, for a head that declares no body, tells it all it
   * needs (`peer`, `clientGone`, `clientLeft`). A waiting verdict may read the request later.
   */
  readonly fromHead?: boolean;
  /**
   * The verdict now, or later: a promise, or a promise-like whose `then` returns a promise and
   * may call back synchronously (the load gate starts a deferred request inside a later turn).
   */
  admit(admission: _Admission): GateVerdict | PromiseLike<GateVerdict>;
  /**
   * A forced drain: every request waiting at this gate is answered now with {@linkcode _FORCED}
   * (what it holds given back), not left for its wait to end — a permit coming back after the
   * drain would otherwise start its handler then (Deno), or the runtime's force close cut it
   * unanswered (Node, Bun). Gates that never wait have none.
   */
  refuseWaiting?(): void;
}

/** Where a guard keeps its gate list, for tests that check the order (not exported from the package). */
export const _GATES: unique symbol = Symbol("serve-hygiene.gates") as never;
