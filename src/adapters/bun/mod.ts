/**
 * serve-hygiene for Bun.serve.
 * @module
 */
export * from "./host.ts";
export { type BunServeOptions, serve } from "./serve.ts";
