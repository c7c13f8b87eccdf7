// The runtime-agnostic core, as the subpath modules (adapters, hono, prometheus) see it: they
// import the core from here only (test/layering.test.ts). Not a public entry: the package
// root, src/mod.ts, names what users get. Re-exports only.
export * from "./host/mod.ts";
export * from "./lifecycle/mod.ts";
export * from "./limits/mod.ts";
export * from "./overload/mod.ts";
export * from "./request/mod.ts";
export * from "./clock.ts";
export * from "./config.ts";
export { HygieneError, type HygieneErrorCode, isHygieneError } from "./errors.ts";
export * from "./events.ts";
export * from "./guard.ts";
export * from "./serve.ts";
export * from "./shed_log.ts";
export * from "./size_gauge.ts";
// Validation helpers the subpath modules share with the core (same messages everywhere).
export { _durationMs, type _KeyList, _nonNegativeInt, _onlyKnown, _optionalBoolean, _options, _positiveIntOrInfinity, _show, MAX_TIMER_MS } from "./_validate.ts";
// User code called while serving: its failures never reach the request path (_user_code.ts).
export { _emit } from "./_emit.ts";
export { _keyResult, _safeLogger, _settleQuietly } from "./_user_code.ts";
