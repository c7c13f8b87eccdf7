/**
 * serve-hygiene for Bun.serve.
 * @module
 */
export * from "./host.ts";
export * from "./serve.ts";
