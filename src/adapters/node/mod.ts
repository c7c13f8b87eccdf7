/**
 * serve-hygiene for node:http.
 * @module
 */
export * from "./host.ts";
export * from "./serve.ts";
export { listenNode, type NodeListenOptions } from "./server.ts";
