// Stopping cleanly: the shutdown controller, the two-phase drain, readiness, exit
// codes, the serve error.
// Re-exports only; core/mod.ts gathers the folders.
export * from "./drain.ts";
export * from "./exit_code.ts";
export * from "./lifecycle_config.ts";
export * from "./readiness.ts";
export * from "./serve_error.ts";
export * from "./shutdown_controller.ts";
