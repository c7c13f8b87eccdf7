// Gate 8: the body cap. The cap that applies (the service cap, or a declared route's) is
// known before the handler runs, so a declared length over it is refused with 413 whether or
// not the handler would read the body, and a handler that never reads it cannot make the
// runtime ingest it (past 64 KiB the connection closes instead of reading the rest). A body
// that may still pass the cap, or may have to be failed at the deadline, is handed on as a
// byte-counting stream; with neither, the request passes untouched (no second Request).
import { limitBody } from "../request/body_limit.ts";
import { _capFor, closesOnUnreadBody, type RouteBodyLimit, UNREAD_BODY_KEEP_BYTES } from "../request/body_caps.ts";
import type { _Admission } from "../request/admission.ts";
import type { _BodyWaits } from "../request/_body_waits.ts";
import { type Gate, type GateRefusal, PASS } from "./gate.ts";
import type { DenyEvent } from "../events.ts";

/** The deny event of a body past its cap once the handler has answered (see `onOverflow`). */
const OVER_CAP_LATE: DenyEvent = Object.freeze({ type: "deny", layer: "body", reason: "over-cap", status: 413 });

// Its layer is framing's: what is wrong is the request's form, not its size.
const MALFORMED_TARGET: GateRefusal = Object.freeze({ layer: "framing", reason: "malformed-target", status: 400, close: true });

/**
 * The body cap gate. `timed`: a deadline applies (a body must be failable when it passes).
 * `waits`: a request whose counted body is read slowly gives up its permit's place (_body_waits.ts).
 */
export function _bodyCapGate(service: number | undefined, routes: readonly RouteBodyLimit[], timed: boolean, waits?: _BodyWaits): Gate {
  // A request without a body is not looked up (it cannot pass a cap); a route that raises its
  // cap all the same (Hono's bodyLimit() on an empty POST) has it looked up then.
  const routeCap = routes.length === 0 ? undefined : (request: Request) => _capFor(request, service, routes);
  return {
    layer: "body",
    processWide: false,
    fromHead: true,
    admit(a: _Admission) {
      const declared = a.declared;
      const body = a.body === undefined ? (a.body = a.request.body) : a.body;
      if (declared === undefined && body === null) {
        a.setCapBefore(service, routeCap);
        return PASS;
      }
      const cap = _capFor(a.request, service, routes);
      a.setCapBefore(cap);
      if (declared?.kind === "length" && cap !== undefined && declared.bytes > cap) {
        body?.cancel().catch(() => {});
        return { reason: "over-cap", status: 413, close: closesOnUnreadBody(declared) };
      }
      if (body === null) return PASS;
      // A client waiting for `100 Continue` (node) is told to send once the body is wanted.
      const wanted = a.info?.continueBody;
      // Without a cap, a deadline or a large rest to watch (unread, it closes the connection),
      // the body needs no counting stream: the handler reads the runtime's own.
      const small = declared?.kind === "length" && declared.bytes <= UNREAD_BODY_KEEP_BYTES;
      if (cap === undefined && !timed && small) {
        // The last gate that could refuse it: a deadline applies to no such request.
        wanted?.();
        return PASS;
      }
      const read = a.permit === undefined ? undefined : waits?.read(a.permit);
      const limited = limitBody(body, {
        limit: () => a.bodyLimit,
        declared,
        onOverflow: () => {
          a.overflowed = true;
          // Past the cap after the handler answered (an echo streaming the body back, cut off; a
          // read it left running): the answer is not turned into a 413, but the body passed its
          // cap and is reported so (it was not: a review saw the over-cap echo counted as a plain 200).
          if (a.settled) a.report(OVER_CAP_LATE);
        },
        onEnd: () => {
          a.bodyEnded = true;
          read?.arrived();
        },
        onRead: read,
        onFirstRead: wanted,
        onSourceError: (error) => a.bodyBroke(error),
        bindFail: (fail) => (a.failBody = fail),
      });
      try {
        a.forward = new Request(a.request, { body: limited, duplex: "half" } as RequestInit);
      } catch {
        // The runtime's own request has a URL no Request takes (Bun: an invalid Host leaves
        // it relative): a malformed request, refused like one, its body unread.
        body.cancel().catch(() => {});
        return MALFORMED_TARGET;
      }
      return PASS;
    },
  };
}
