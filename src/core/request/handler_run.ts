// Gate 10 of DESIGN.md's request path, the handler: it runs with the admission's view and its
// request gets one answer — the handler's own, a 413 when its body passed the cap, a 500 when
// it failed, or the 408 its deadline sends while it still runs. What the request holds is
// released when the handler settles, not when a 408 went out, so the in-flight count is true
// work. Internal: the guard (guard.ts) runs the gates and hands the admitted request here.
import type { Clock } from "../clock.ts";
import type { DenyLayer, EventSink } from "../events.ts";
import { _emit } from "../_emit.ts";
import type { GateRefusal } from "../gates/gate.ts";
import type { GuardedHandler } from "../guard_types.ts";
import type { _InfoHandler } from "../guarded_fetch.ts";
import { _LinkedList } from "../_linked_list.ts";
import type { _Admission } from "./admission.ts";
import { isBodyTooLargeError } from "./body_limit.ts";
import { _unreadCloses, _withClose, closesOnUnreadBody } from "./body_caps.ts";
import { dropConnectionAfter } from "./connection_drop.ts";
import { _lazyArming } from "./_lazy_arming.ts";
import type { _LongLived } from "./_long_lived.ts";
import { _refusalResponse } from "../gates/refuse.ts";
import { _carried } from "./refusal_headers.ts";
import { _answering } from "../errors.ts";

const TIMEOUT = () => _answering(new DOMException("The request deadline passed", "TimeoutError"), 408);
const DEADLINE: GateRefusal = Object.freeze({ reason: "deadline", status: 408, close: true });
const OVER_CAP: GateRefusal = Object.freeze({ reason: "over-cap", status: 413 });
const OVER_CAP_CLOSE: GateRefusal = Object.freeze({ reason: "over-cap", status: 413, close: true });

/** What the handler's run takes from its guard. */
export interface _HandlerRunParts {
  clock: Clock;
  /** The service's request deadline (a response that may outlive its handler is tracked against it). */
  requestTimeoutMs: number;
  longLived: _LongLived;
  /** The guard's one place a refusal is reported and answered. */
  /** The guard's refusal (reported, with the service's headers for `a`'s request). */
  refuse(layer: DenyLayer, r: GateRefusal, a?: _Admission): Response;
  /** A handler that failed (not after a 408: that failure is the expected reaction to its signal). */
  onError(error: unknown, request: Request): void;
  /** Where each answered request is reported (`request` events), if anywhere. */
  onEvent: EventSink | undefined;
}

/** The handler's run, for one guard. */
export interface _HandlerRun {
  /**
   * Runs `handler` for the admitted `a`. A Response returned synchronously is answered
   * synchronously (nothing else can have answered yet: a deadline or a forced drain needs a
   * turn of the event loop); a promise is answered when it settles, unless a 408 or a forced
   * drain answered first. Only a handler that turned asynchronous is tracked for a forced drain
   * and gets its deadline armed (from its arrival): nothing can interrupt synchronous code.
   * With a delivery, the handler's fulfilled value is not its answer: `read` gives that, and
   * the answer goes to `deliver` (the promise returned then resolves to nothing).
   */
  run(handler: _InfoHandler, a: _Admission, withInfo: boolean): Response | Promise<Response>;
  /** `a`'s deadline passed: 408, unless its handler settled first (the deadline wheel's callback). */
  onDeadline(a: _Admission): void;
  /** Requests answered 408 whose handlers still run. */
  readonly stragglers: number;
  /** The handlers running now (asynchronous ones), oldest first. */
  running(): _Admission[];
  dispose(): void;
}

/** Builds the handler's run of one guard. */
export function _handlerRun(parts: _HandlerRunParts): _HandlerRun {
  const { clock, requestTimeoutMs, longLived, refuse, onError, onEvent } = parts;
  const eventSinks = [onEvent];
  const live = new _LinkedList<_Admission>();
  let stragglers = 0;

  const onDeadline = (a: _Admission) => {
    if (a.settled || a.sentStatus !== undefined) return;
    // A handshake the runtime must answer with its handler's own 101 (ServeInfo.upgrading).
    if (a.info?.upgrading?.(a.request) === true) return;
    a.abandon(TIMEOUT());
    // A 408 ends its connection (RFC 9110 §15.5.9); with a body that may still be arriving,
    // even where the runtime would read it to its end (Deno).
    const res = refuse("timeout", DEADLINE, a);
    if (a.answer(a.failBody === undefined ? res : dropConnectionAfter(res))) {
      a.straggling = true;
      stragglers++;
    }
  };
  // Deadlines are armed at the first tick that finds the handler still running (_lazy_arming.ts).
  const arming = _lazyArming(live, clock, onDeadline);

  // The status reported is the one sent: a 408 or a forced drain's 503 given while the handler
  // ran, else the answer made of its result (`status`).
  // The outcome follows the status sent: a 5xx is an error whoever made it (a Hono app's
  // onError turns a route's throw into a 500 the guard sees as an answer: a review found
  // `outcome="error"` at 0 under Hono; a forced drain's 503) — unless the client had left before
  // any answer: nobody received it, and an observability review saw each client leaving a route
  // that follows its signal counted as a server error ("aborted" now; `gone`).
  const report = (a: _Admission, status: number, outcome: "ok" | "error", gone = a.abandonedBy !== undefined && a.sentStatus === undefined) => {
    if (onEvent === undefined) return;
    const sent = a.sentStatus ?? status;
    _emit(eventSinks, {
      type: "request",
      status: sent,
      durationMs: clock.now() - a.startedAt,
      outcome: a.straggling ? "timeout" : gone ? "aborted" : sent >= 500 ? "error" : outcome,
    });
  };

  const overCap = (a: _Admission) => refuse("body", closesOnUnreadBody(a.declared) ? OVER_CAP_CLOSE : OVER_CAP, a);

  // What the request holds is released when the handler settles — not when a 408 went out.
  const settle = (a: _Admission, completed = false) => {
    if (a.straggling) stragglers--;
    a.finish(completed);
    live.delete(a);
    longLived.settled(a);
  };

  // A handler that settled after its request was answered (a 408, a forced drain's 503): its
  // result is dropped, and no answer is made of it (no refusal reported for an answer never sent).
  // A failure then is the expected reaction to the aborted signal; a value not a Response is a bug.
  const late = (a: _Admission, res: unknown, failed: boolean): void => {
    settle(a);
    if (res instanceof Response) res.body?.cancel().catch(() => {});
    else if (!failed) onError(new TypeError("The handler did not return a Response"), a.request);
    report(a, 0, res instanceof Response ? "ok" : "error");
  };

  // What the handler's settled value becomes (the handler's answer, a 413, or a 500).
  const outcome = (a: _Admission, value: unknown): Response => {
    // `Response.error()` (status 0) cannot be sent: the runtime answered 500 (Node with the
    // error's text, closing the connection) while it was reported as a 0 "ok" and sampled (a review).
    const res = value instanceof Response && value.status !== 0 ? value : undefined;
    // Only a normal answer is a latency sample for the adaptive limit (not a 5xx, a 408, an abort).
    settle(a, res !== undefined && res.status < 500);
    let out: Response;
    if (a.overflowed) {
      // The 413 keeps what the handler's answer carried that is about neither its body nor
      // caching nor the connection: a framework's CORS headers (a browser reads the 413 then).
      if (res !== undefined) {
        res.body?.cancel().catch(() => {});
        out = _carried(res, overCap(a));
      } else out = overCap(a);
    } else if (res !== undefined) {
      // A body the handler left unread, over 64 KiB or of unknown length: the connection
      // closes rather than make the runtime read the rest (Bun and Deno would, unbounded).
      out = longLived.response(a, !a.bodyEnded && a.body !== null && _unreadCloses(a.request, a.declared, true) ? _withClose(res) : res, requestTimeoutMs);
    } else {
      onError(new TypeError(value instanceof Response ? "The handler returned an error Response (Response.error()), which cannot be sent" : "The handler did not return a Response"), a.request);
      out = _refusalResponse(500);
    }
    report(a, out.status, res !== undefined ? "ok" : "error");
    return out;
  };
  // Whether `error` is the abort of a request whose client left (not a failure of the handler's
  // own): its body's read failed (the connection broke mid-body: node's `aborted`, Deno's
  // BadResource, which a review saw logged as handler failures), or the client is gone and the
  // error is its abort (the signal's reason, an AbortError).
  const _clientsAbort = (a: _Admission, error: unknown): boolean => {
    if (a.bodyFailed) return true;
    if (!(a.info?.clientGone ?? a.request.signal.aborted)) return false;
    return error === a.request.signal.reason || (error as { name?: unknown } | null)?.name === "AbortError";
  };

  const failure = (a: _Admission, error: unknown): Response => {
    settle(a);
    let out: Response;
    let gone = false;
    if (a.overflowed || isBodyTooLargeError(error)) out = overCap(a);
    else {
      // After a 408 the failure is the expected reaction to the aborted signal, and so is the
      // abort itself once the client left (a wait on the request's signal rejected with its
      // reason — @hono/node-server's is a string — or an AbortError): a review saw that reach
      // onError as a handler's failure. Any other failure is still one, client gone or not.
      if (a.abandonedBy === undefined && !_clientsAbort(a, error)) onError(error, a.request);
      // Reported as the client's leaving only when the failure is its abort (a review: a
      // handler's own TypeError after its client left read as "aborted", in neither the log
      // nor the errors).
      gone = error === a.abandonedBy || _clientsAbort(a, error);
      out = _refusalResponse(500);
    }
    // A read that failed at the cap is the client's doing, answered 413: not a handler error.
    report(a, out.status, out.status === 500 ? "error" : "ok", gone);
    return out;
  };

  // Making the answer failed (a value whose reads throw, a delivery that threw): a synchronous
  // throw reaches the adapter's fallback 500, but here it was an unhandled rejection, the
  // request never answered and what it held kept (a review: the process ended). A 500, and
  // what it holds given back.
  const lastResort = (a: _Admission, error: unknown) => {
    try {
      onError(error, a.request);
    } catch {
      // the hook's own failure is logged by it
    }
    if (!a.settled) settle(a);
    // Nothing sent: the answer's own report did not come either (a diff review: no request event).
    const unsent = a.sentStatus === undefined;
    if (unsent) report(a, 500, "error");
    const resolve = a.resolve;
    if (resolve === undefined) return;
    if (a.delivery !== undefined) {
      try {
        if (unsent) a.delivery.deliver(_refusalResponse(500), a.info, false);
      } catch {
        // nothing more to be done: the chain answers with what it has
      }
      return resolve(undefined);
    }
    resolve(_refusalResponse(500));
  };

  const run = (handler: _InfoHandler, a: _Admission, withInfo: boolean): Response | Promise<Response> => {
    let result: Response | Promise<Response>;
    try {
      result = withInfo ? handler(a.forward, a.view, a.info) : (handler as GuardedHandler)(a.forward, a.view);
    } catch (error) {
      return failure(a, error);
    }
    if (result instanceof Response) return outcome(a, result);
    live.push(a);
    arming.track(a);
    const delivery = a.delivery;
    return new Promise<Response>((resolve) => {
      a.resolve = resolve as (res: Response | undefined) => void;
      Promise.resolve(result).then(
        (res) => {
          try {
            const value = delivery === undefined ? res : delivery.read(a.info);
            if (a.sentStatus === undefined) a.answer(outcome(a, value));
            else late(a, value, false);
          } catch (error) {
            lastResort(a, error);
          }
        },
        (error: unknown) => {
          try {
            if (a.sentStatus === undefined) a.answer(failure(a, error));
            else late(a, undefined, true);
          } catch (failed) {
            lastResort(a, failed);
          }
        },
      );
    });
  };

  return {
    run,
    onDeadline,
    get stragglers() {
      return stragglers;
    },
    running: () => live.snapshot(),
    dispose: () => arming.dispose(),
  };
}
