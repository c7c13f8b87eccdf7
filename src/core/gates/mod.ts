// The request path as gate objects, one file each, in DESIGN.md's order. Internal: guard.ts
// declares the list from these; nothing here is public API. Re-exports only.
export { _FORCED, _GATES, type Gate, type GateRefusal, type GateVerdict, PASS } from "./gate.ts";
export { _clonedRefusal, type _HeadAnswer, _refusalHead, _refusalResponse } from "./refuse.ts";
export { _drainingGate } from "./draining.ts";
export { _memoryGate } from "./memory.ts";
export { _loadGate, type _LoadGate } from "./load.ts";
export { _framingGate } from "./framing.ts";
export { _rateLimitGate } from "./rate_limits.ts";
export { _keyInFlightGate } from "./key_in_flight.ts";
export { _concurrencyGate } from "./concurrency.ts";
export { _bodyCapGate } from "./body_cap.ts";
export { _deadlineGate } from "./deadline.ts";
