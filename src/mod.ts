/**
 * serve-hygiene: keep one HTTP server process healthy under overload, abuse and shutdown.
 * The root export is the runtime-agnostic core; adapters live at `serve-hygiene/bun`,
 * `serve-hygiene/deno` and `serve-hygiene/node`.
 * @module
 */
export * from "./core/mod.ts";
