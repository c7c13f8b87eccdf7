// The small Host/Server interface the adapters supply, and the one Host built from a
// runtime's primitives.
// Re-exports only; core/mod.ts gathers the folders.
export * from "./create_host.ts";
export * from "./host.ts";
export * from "./peer_address.ts";
export * from "./server.ts";
export * from "./signals.ts";
export { _cgroupCores } from "./cpu_quota.ts";
