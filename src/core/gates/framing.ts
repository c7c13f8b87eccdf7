// Gate 4: the request's framing. A malformed Content-Length is refused with 400 before any
// budget is charged or any slot or permit is taken. The declared length is kept for the body
// cap (gate 8). A GET or HEAD is asked for its headers only when its adapter says the head
// declares a body (on Deno and Bun a header read costs every GET).
import { declaredLength } from "../request/body_limit.ts";
import type { _Admission } from "../request/admission.ts";
import { type Gate, type GateRefusal, PASS } from "./gate.ts";

const MALFORMED: GateRefusal = Object.freeze({ reason: "malformed-length", status: 400 });

/** The framing gate. */
export function _framingGate(): Gate {
  return {
    layer: "framing",
    processWide: false,
    fromHead: true,
    admit(a: _Admission) {
      const info = a.info;
      // The adapter saw no body (Deno: the request's body is null): nothing to frame, and
      // not even the method is read (a call into the runtime on Deno).
      if (info?.declaresBody === false) return PASS;
      const request = a.request;
      const method = request.method;
      const bodyless = method === "GET" || method === "HEAD";
      if (bodyless) {
        if (info?.declaresBody !== true) return PASS;
      } else {
        // The adapter's word on the head (Node) spares reading `request.body` here: on Node
        // that builds the full Request, which a request refused by a later gate never needs.
        // The body cap gate reads it once the request got that far.
        if (info?.declaresBody === true) a.body = undefined;
        else if ((a.body = request.body) === null) return PASS;
      }
      // The runtime's parser read the length already (node): no header is read here.
      const parsed = info?.declaresBody === true ? info.declared : undefined;
      if (parsed !== undefined) {
        if (parsed.kind === "malformed") return MALFORMED;
        if (parsed.kind === "length") a.declared = parsed;
        return PASS;
      }
      const headers = request.headers;
      if (!headers.has("content-length")) return PASS;
      const declared = declaredLength(headers);
      if (declared.kind === "malformed") return MALFORMED;
      a.declared = declared;
      return PASS;
    },
  };
}
