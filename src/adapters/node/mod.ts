/**
 * serve-hygiene for node:http.
 * @module
 */
export * from "./host.ts";
export { type NodeServeOptions, serve } from "./serve.ts";
