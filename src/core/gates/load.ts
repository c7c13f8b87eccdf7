// Gate 3: the event-loop load monitor's admitted share. Its probe starts with the first
// request, so start-up work between createGuard() and serving (module loading, warming caches)
// is not read as a stalled loop; a probe stopped for lack of requests (idleAfterMs) is
// restarted by the next request's admit().
import type { LoadMonitor } from "../overload/load_monitor.ts";
import type { _Admission } from "../request/admission.ts";
import { type Gate, type GateRefusal, PASS } from "./gate.ts";

/** The load gate, and how to stop it from starting the probe (the guard was disposed). */
export interface _LoadGate extends Gate {
  dispose(): void;
}

/** The load gate over a load monitor. */
export function _loadGate(load: LoadMonitor): _LoadGate {
  let idle = true;
  // Built once: a refusal under a storm allocates nothing here.
  const busy: GateRefusal = Object.freeze({ reason: "busy", status: 503, retryAfterMs: load.retryAfterMs });
  const batch: GateRefusal = Object.freeze({ reason: "batch", status: 503, retryAfterMs: load.retryAfterMs });
  return {
    layer: "load",
    processWide: true,
    admit(a: _Admission) {
      if (idle) {
        idle = false;
        load.start();
        return PASS;
      }
      const refusal = load.refusal(a.startedAt);
      return refusal === undefined ? PASS : refusal === "batch" ? batch : busy;
    },
    dispose() {
      idle = false;
    },
  };
}
