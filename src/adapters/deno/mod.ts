/**
 * serve-hygiene for Deno.serve.
 * @module
 */
export * from "./host.ts";
export * from "./serve.ts";
