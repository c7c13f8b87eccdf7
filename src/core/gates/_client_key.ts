// The client key of gates 5 and 6, computed once per request by whichever gate needs it first.
import type { EventSink } from "../events.ts";
import type { _KeyedParts } from "../limits/keyed_gates.ts";
import type { _Admission } from "../request/admission.ts";
import { _emit } from "../_emit.ts";
import { _keyResult } from "../_user_code.ts";
import type { GateRefusal } from "./gate.ts";

const KEY_FAILED: GateRefusal = Object.freeze({ reason: "limiter-error", status: 429, retryAfterMs: 1000 });

/**
 * Sets `a.key`, or — when the key function throws or returns something other than a string —
 * emits a fault and returns the refusal (fail closed: 429).
 */
export function _keyFor(a: _Admission, parts: Pick<_KeyedParts, "keyOf" | "ownKey">, sink: EventSink): GateRefusal | undefined {
  if (a.key !== undefined) return undefined;
  try {
    const info = a.info;
    a.key = _keyResult(parts.keyOf(a.request, parts.ownKey ? info : { peer: info?.peer }), "the client-key function");
    return undefined;
  } catch (error) {
    _emit([sink], { type: "fault", source: "client-key", error, failed: "closed" });
    return KEY_FAILED;
  }
}
