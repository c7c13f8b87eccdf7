import type { Host } from "../../core/mod.ts";
import { createProcessHost, type ProcessHostOptions } from "../node/process_host.ts";

/** Options of {@linkcode createBunHost}. */
export type BunHostOptions = ProcessHostOptions;

/**
 * The Host for Bun: RSS from `process.memoryUsage.rss()` (~10 µs a read, so it is read on
 * a timer), SIGTERM/SIGINT through `process.on`, unref'd timers.
 *
 * @example
 * ```ts
 * import { createBunHost } from "serve-hygiene/bun";
 * const host = createBunHost();
 * console.assert((host.rss() ?? 0) > 0);
 * ```
 */
export function createBunHost(options?: BunHostOptions): Host {
  return createProcessHost(options);
}
