/**
 * serve-hygiene for Deno.serve.
 * @module
 */
export * from "./host.ts";
export { type DenoServeOptions, serve } from "./serve.ts";
