// The runtime-agnostic core. Re-exports only.
export * from "./bounded_map.ts";
export * from "./clock.ts";
export * from "./concurrency_limit.ts";
export * from "./config.ts";
export { HygieneError, isHygieneError } from "./errors.ts";
export * from "./events.ts";
export * from "./host.ts";
export * from "./manual_clock.ts";
export * from "./ring.ts";
export * from "./server.ts";
export * from "./signals.ts";
export * from "./size_gauge.ts";
