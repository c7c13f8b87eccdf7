/**
 * serve-hygiene for node:http.
 * @module
 */
export * from "./host.ts";
