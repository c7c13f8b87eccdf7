// Gate 6: the per-key in-flight cap. The slot is held by the admission until the handler
// settles (or given back at once when a later gate refuses). The limiter reports its own
// refusals. With a shed wait, a request over its key's cap waits for one of the key's slots
// and leaves the wait when its client goes away; without one the client's signal is never read.
import type { EventSink } from "../events.ts";
import type { InFlightRefusal, Slot } from "../limits/inflight_limit.ts";
import type { _KeyedParts } from "../limits/keyed_gates.ts";
import type { _Admission } from "../request/admission.ts";
import { type Gate, type GateRefusal, type GateVerdict, PASS } from "./gate.ts";
import { _keyFor } from "./_client_key.ts";

/** The per-key in-flight gate, and its slot taken early for a request about to wait at an earlier gate. */
export interface _KeyInFlightGate extends Gate {
  /**
   * Takes the request's key's slot now, or answers the refusal the gate would give: for a request
   * about to wait for a later turn at the load gate (gate 3). Counted only from gate 6, a client's
   * requests waiting there were no part of its cap: under a CPU-bound storm, where the load
   * gate is what holds requests, 150 connections of one client at a cap of 16 were never
   * refused, and other clients' requests waiting among theirs lost a quarter to the wait bound
   * (a review, all runtimes). Undefined also where it cannot be told now (the cap waits for a
   * key's slot, or the key needs a Request node's head path has not built): gate 6 decides.
   */
  reserve(a: _Admission): GateRefusal | undefined;
}

/** The per-key in-flight gate over the keyed parts (their `inFlight` must be set). */
export function _keyInFlightGate(parts: _KeyedParts, sink: EventSink): _KeyInFlightGate {
  const limiter = parts.inFlight!;
  const waits = limiter.shedWaitMs > 0;
  const verdict = (a: _Admission, s: Slot | InFlightRefusal): GateVerdict => {
    if (s.ok) {
      a.hold(s);
      return PASS;
    }
    // "aborted": the client left while waiting; nobody receives the answer, but the guard
    // reports it (the limiter does not: a review found such requests had no event at all), as
    // the admission queue's. A forced drain's end of the wait is reported as the drain's (guard.ts).
    return s.reason === "aborted"
      ? { reason: s.reason, status: 503 }
      : { reason: s.reason, status: s.status, retryAfterMs: s.retryAfterMs, reported: true };
  };
  return {
    layer: "peer",
    processWide: false,
    // A wait watches the request's signal.
    fromHead: parts.fromHead && !waits,
    admit(a: _Admission) {
      if (a.keySlot) return PASS;
      const failed = _keyFor(a, parts, sink);
      if (failed !== undefined) return failed;
      const s = limiter.enter(a.key!, waits ? a.request.signal : undefined);
      return s instanceof Promise ? s.then((r) => verdict(a, r)) : verdict(a, s);
    },
    reserve(a: _Admission) {
      if (waits || a.keySlot || (a.request === undefined && !parts.fromHead)) return undefined;
      const failed = _keyFor(a, parts, sink);
      if (failed !== undefined) return { ...failed, layer: "peer" };
      const s = limiter.enter(a.key!, undefined) as Slot | InFlightRefusal;
      // No wait here (`waits` is false), so never "aborted": the limiter reported it, as at gate 6.
      if (!s.ok) return { reason: s.reason, status: s.status, retryAfterMs: s.retryAfterMs, reported: true, layer: "peer" };
      a.hold(s);
      a.keySlot = true;
      return undefined;
    },
    // The guard answers them its forced drain's refusal (guard.ts).
    refuseWaiting: () => limiter._refuseWaiting(),
  };
}
