// The process-wide overload gates' state: the connection cap, the concurrency limit (fixed or adaptive),
// the memory ceiling, the load monitor.
// Re-exports only; core/mod.ts gathers the folders.
export * from "./adaptive_limit.ts";
export * from "./concurrency_limit.ts";
export * from "./connection_gate.ts";
export * from "./load_monitor.ts";
export * from "./memory_ceiling.ts";
