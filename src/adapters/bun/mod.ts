/**
 * serve-hygiene for Bun.serve.
 * @module
 */
export * from "./host.ts";
