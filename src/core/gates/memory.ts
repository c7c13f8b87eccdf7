// Gate 2: one boolean the RSS sampler sets; while it is up, new requests get 503 + Retry-After.
import type { MemoryCeiling } from "../overload/memory_ceiling.ts";
import { type Gate, type GateRefusal, PASS } from "./gate.ts";

const OVER: GateRefusal = Object.freeze({ reason: "over-ceiling", status: 503, retryAfterMs: 1000 });

/** The memory gate over a memory ceiling. */
export function _memoryGate(memory: MemoryCeiling): Gate {
  return { layer: "memory", processWide: true, fromHead: true, admit: () => (memory.shedding ? OVER : PASS) };
}
