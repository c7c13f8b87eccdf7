// The runtime-agnostic core. Re-exports only.
export * from "./body_limit.ts";
export * from "./bounded_map.ts";
export * from "./clock.ts";
export * from "./concurrency_limit.ts";
export * from "./config.ts";
export * from "./deadline_wheel.ts";
export { HygieneError, isHygieneError } from "./errors.ts";
export * from "./events.ts";
export * from "./host.ts";
export * from "./load_monitor.ts";
export * from "./manual_clock.ts";
export * from "./memory_ceiling.ts";
export * from "./responses.ts";
export * from "./ring.ts";
export * from "./server.ts";
export * from "./signals.ts";
export * from "./size_gauge.ts";
