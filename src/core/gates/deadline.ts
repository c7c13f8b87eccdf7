// Gate 9: the request timeout. It refuses nothing on the way in: it arms the request's
// deadline on the shared wheel, and at the deadline the guard answers 408 (layer "timeout")
// and fires the handler's signal.
import type { _Admission } from "../request/admission.ts";
import { type Gate, PASS } from "./gate.ts";

/** The deadline gate (only in the list when the service has a finite timeout). */
export function _deadlineGate(): Gate {
  return {
    layer: "timeout",
    processWide: false,
    admit(a: _Admission) {
      a.arm(a.startedAt);
      return PASS;
    },
  };
}
