// Gate 1: once the shutdown controller's signal aborts, new requests get 503 + Connection: close.
import { type Gate, type GateRefusal, PASS } from "./gate.ts";

const DRAINING: GateRefusal = Object.freeze({ reason: "draining", status: 503, retryAfterMs: 1000, close: true });

/** The draining gate over `shutdown` (the signal that aborts when accepting stops). */
export function _drainingGate(shutdown: AbortSignal): Gate {
  return { layer: "draining", processWide: true, fromHead: true, admit: () => (shutdown.aborted ? DRAINING : PASS) };
}
