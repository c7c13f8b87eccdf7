// Gate 9: the request timeout. It refuses nothing on the way in: it marks the request's
// deadline as due, which the guard arms on the shared wheel (counted from the arrival) once
// the handler turns asynchronous; at the deadline the guard answers 408 (layer "timeout") and
// fires the handler's signal. A handler that answers synchronously cannot be late.
import type { _Admission } from "../request/admission.ts";
import { type Gate, PASS } from "./gate.ts";

/** The deadline gate (only in the list when the service has a finite timeout). */
export function _deadlineGate(): Gate {
  return {
    layer: "timeout",
    processWide: false,
    fromHead: true,
    admit(a: _Admission) {
      a.timed = true;
      return PASS;
    },
  };
}
