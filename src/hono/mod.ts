/**
 * serve-hygiene as Hono middleware: the guard at app level, and route-level pieces that
 * adjust the request's context.
 * @module
 */
export { getConnInfo, hygieneContext, peerOf } from "./context.ts";
export * from "./hygiene.ts";
export * from "./route.ts";
