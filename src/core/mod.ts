// The runtime-agnostic core, as the subpath modules (adapters, hono, prometheus) see it: they
// import the core from here only (test/layering.test.ts). Not a public entry: the package
// root, src/mod.ts, names what users get. Re-exports only.
export * from "./body_limit.ts";
export { closesOnUnreadBody, type RouteBodyLimit, UNREAD_BODY_KEEP_BYTES } from "./body_caps.ts";
export * from "./cleanup_registry.ts";
export * from "./client_key.ts";
export * from "./clock.ts";
export * from "./concurrency_limit.ts";
export * from "./config.ts";
export * from "./connection_drop.ts";
export * from "./connection_gate.ts";
export * from "./create_host.ts";
export * from "./deadline_wheel.ts";
export * from "./drain.ts";
export { HygieneError, isHygieneError } from "./errors.ts";
export * from "./events.ts";
export type { ExemptOption } from "./exempt.ts";
export * from "./exit_code.ts";
export * from "./fixed_window.ts";
export * from "./guard.ts";
export * from "./host.ts";
export * from "./inflight_limit.ts";
export * from "./keyed_gates.ts";
export * from "./lifecycle_config.ts";
export * from "./load_monitor.ts";
export * from "./manual_clock.ts";
export * from "./memory_ceiling.ts";
export * from "./peer_address.ts";
export * from "./rate_headers.ts";
export * from "./rate_limiter.ts";
export * from "./readiness.ts";
export type { GuardedInfo, RequestContext } from "./request_context.ts";
export * from "./responses.ts";
export * from "./scopes.ts";
export * from "./serve.ts";
export * from "./serve_error.ts";
export * from "./server.ts";
export * from "./shed_log.ts";
export * from "./shutdown_controller.ts";
export * from "./signals.ts";
export * from "./size_gauge.ts";
export * from "./token_bucket.ts";
// Validation helpers the subpath modules share with the core (same messages everywhere).
export { _durationMs, _positiveIntOrInfinity, _show } from "./_validate.ts";
