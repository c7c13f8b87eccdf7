// The client key of gates 5 and 6, computed once per request by whichever gate needs it first.
import type { EventSink } from "../events.ts";
import type { _KeyedParts } from "../limits/keyed_gates.ts";
import type { _Admission } from "../request/admission.ts";
import { _emit } from "../_emit.ts";
import { _keyResult } from "../_user_code.ts";
import type { GateRefusal } from "./gate.ts";
import type { PeerAddress } from "../host/server.ts";

const KEY_FAILED: GateRefusal = Object.freeze({ reason: "limiter-error", status: 429, retryAfterMs: 1000 });
const GONE: GateRefusal = Object.freeze({ reason: "aborted", status: 503 });
const _PEER: { peer: PeerAddress | undefined } = { peer: undefined };

/**
 * Sets `a.key`, or — when the key function throws or returns something other than a string —
 * emits a fault and returns the refusal (fail closed: 429). A request whose client left before
 * its address could be read is refused ("aborted"), where the adapter says so.
 */
export function _keyFor(a: _Admission, parts: Pick<_KeyedParts, "keyOf" | "ownKey">, sink: EventSink): GateRefusal | undefined {
  if (a.key !== undefined) return undefined;
  try {
    const info = a.info;
    const peer = info?.peer;
    // A client that sent its request and reset the connection at once has no address by the
    // time it is read (Node's socket, Bun's requestIP; Deno's 0.0.0.0:0). Keyed "unknown", it
    // ran past its own address's spent budget (a review); the adapter says it is gone, so
    // nobody receives this refusal, and its handler never runs.
    if (peer === undefined && info?.clientGone === true) return GONE;
    if (parts.ownKey) {
      // The library's own key function keeps nothing of what it is handed: one object serves.
      _PEER.peer = peer;
      a.key = _keyResult(parts.keyOf(a.request, _PEER), "the client-key function");
      _PEER.peer = undefined;
    } else a.key = _keyResult(parts.keyOf(a.request, { peer }), "the client-key function");
    return undefined;
  } catch (error) {
    _emit([sink], { type: "fault", source: "client-key", error, failed: "closed" });
    return KEY_FAILED;
  }
}
