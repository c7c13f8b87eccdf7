import type { Host } from "../../core/mod.ts";
import { createProcessHost, type ProcessHostOptions } from "../node/process_host.ts";

/** Options of {@linkcode createBunHost}. */
export type BunHostOptions = ProcessHostOptions;

/**
 * The Host for Bun: RSS from `process.memoryUsage.rss()` (~10 µs a read, so it is read on
 * a timer), full collections through `Bun.gc(true)`, SIGTERM/SIGINT through `process.on`,
 * unref'd timers. No live-memory reading: Bun gives freed pages back, so its RSS falls by
 * itself (scripts/probes/memory_fall.ts), while JSC's heapUsed counts only part of the
 * array buffers it holds (47.5 MB for 64 MB).
 *
 * @example
 * ```ts
 * import { createBunHost } from "serve-hygiene/bun";
 * const host = createBunHost();
 * console.assert((host.rss() ?? 0) > 0);
 * ```
 */
export function createBunHost(options?: BunHostOptions): Host {
  const bun = (globalThis as { Bun?: { gc(force: boolean): void } }).Bun;
  return createProcessHost(options, {
    collectGarbage: bun === undefined ? undefined : () => bun.gc(true),
  });
}
