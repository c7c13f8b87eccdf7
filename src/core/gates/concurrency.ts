// Gate 7: the concurrency limit. A permit is held by the admission until the handler settles
// (not until the response is sent), so in-flight counts are true work — but for a request
// whose body is read slowly, whose permit stops counting against the limit meanwhile
// (parked: request/_body_waits.ts). At the limit the
// request waits in the bounded admission queue (a promise: only then is the gate asynchronous),
// or is refused at once when there is no queue or it is full; it leaves when its client goes.
import type { _ConcurrencyLimit } from "../overload/concurrency_limit.ts";
import type { _Permit, Permit, Refusal } from "../overload/permit.ts";
import type { _Admission } from "../request/admission.ts";
import { type Gate, type GateVerdict, PASS } from "./gate.ts";
import { _pathStart } from "../request/_url_path.ts";

/** A waiting request and its verdict's promise: all its wait keeps, besides the queue's waiter. */
interface _GateWait {
  readonly a: _Admission;
  readonly resolve: (v: GateVerdict) => void;
}

/** The concurrency gate over a concurrency limit. */
export function _concurrencyGate(concurrency: _ConcurrencyLimit): Gate {
  const adaptive = concurrency.adaptive;
  const verdict = (a: _Admission, p: Permit | Refusal): GateVerdict => {
    if (p.ok) {
      // Its kind for the adaptive limit: each route's latency is read against its own.
      if (adaptive) (p as _Permit).kind = _kindOf(a);
      a.hold(p);
      a.permit = p;
      return PASS;
    }
    return { reason: p.reason, status: 503, retryAfterMs: p.retryAfterMs };
  };
  // The wait's end resolves the verdict itself: no promise chained onto another.
  const waited = (w: _GateWait, p: Permit | Refusal) => w.resolve(verdict(w.a, p));
  return {
    layer: "concurrency",
    processWide: true,
    fromHead: true,
    admit(a: _Admission) {
      // Dated at arrival, a wait at the load gate included (AdaptiveLimit.sample says why).
      const permit = concurrency.tryAcquire(a.startedAt);
      if (permit.ok || concurrency.shedWaitMs === 0) return verdict(a, permit);
      return new Promise<GateVerdict>((resolve) => {
        // The adapter's own event for the client leaving where it has one: on node the request's
        // signal would cost every waiting request an AbortController.
        const now = concurrency._acquireFor({ a, resolve }, waited, a.info?.clientLeft ?? a.request.signal, a.startedAt);
        if (now !== undefined) resolve(verdict(a, now));
      });
    },
    // The guard answers them its forced drain's refusal (guard.ts).
    refuseWaiting: () => concurrency._refuseWaiting(),
  };
}

/**
 * A request's kind for the adaptive limit: its URL's path, without scheme, host or query (the
 * adapter's request target where it has one: node's head path reads no Request). With the host,
 * a client naming a new Host each request made each one a kind of its own.
 */
function _kindOf(a: _Admission): string {
  const url = a.info?.target ?? a.request.url;
  const start = _pathStart(url);
  if (start === -1) return url;
  const q = url.indexOf("?", start);
  return start === 0 && q === -1 ? url : url.slice(start, q === -1 ? url.length : q);
}
