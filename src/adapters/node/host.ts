import type { Host } from "../../core/mod.ts";
import { createProcessHost, type ProcessHostOptions } from "./process_host.ts";

/** Options of {@linkcode createNodeHost}. */
export type NodeHostOptions = ProcessHostOptions;

/**
 * The Host for Node: RSS from `process.memoryUsage.rss()`, live memory as heap used +
 * external from `process.memoryUsage()`, full collections through `globalThis.gc` when
 * Node runs with `--expose-gc`, SIGTERM/SIGINT through `process.on`, unref'd timers.
 *
 * @example
 * ```ts
 * import { createNodeHost } from "serve-hygiene/node";
 * const host = createNodeHost();
 * const uninstall = host.onShutdownSignal((signal) => console.log("stopping on", signal));
 * uninstall();
 * ```
 */
export function createNodeHost(options?: NodeHostOptions): Host {
  return createProcessHost(options);
}
