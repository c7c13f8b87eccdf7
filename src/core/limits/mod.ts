// The keyed limits: the client key, the fixed window and token bucket rate limiters,
// scopes, the per-key in-flight cap, and their HTTP fields.
// Re-exports only; core/mod.ts gathers the folders.
export * from "./client_key.ts";
export * from "./fixed_window.ts";
export * from "./inflight_limit.ts";
export * from "./keyed_gates.ts";
export * from "./rate_headers.ts";
export * from "./rate_limiter.ts";
export * from "./rate_store.ts";
export * from "./scopes.ts";
export * from "./shared_limiter.ts";
export * from "./token_bucket.ts";
export * from "./flow_queue.ts";
export { _keyHash } from "./_key_hash.ts";
