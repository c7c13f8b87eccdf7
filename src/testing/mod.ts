// Tools for testing code that uses serve-hygiene, kept apart from the runtime code: the
// manual clock. Re-exported from the package root. Re-exports only.
export * from "./manual_clock.ts";
