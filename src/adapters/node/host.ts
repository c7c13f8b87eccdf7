import process from "node:process";
import { createHost, type Host, type Logger } from "../../core/mod.ts";

/** Options of {@linkcode createNodeHost}. */
export interface NodeHostOptions {
  /** Where install failures are logged. @default consoleLogger */
  log?: Logger;
}

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
export function createNodeHost(options: NodeHostOptions = {}): Host {
  const gc = (globalThis as { gc?: unknown }).gc;
  return createHost({
    log: options.log,
    rss: () => process.memoryUsage.rss(),
    setImmediate: (fn) => setImmediate(fn),
    clearImmediate: (id: ReturnType<typeof setImmediate>) => clearImmediate(id),
    liveBytes: () => {
      const m = process.memoryUsage();
      return m.heapUsed + m.external;
    },
    collectGarbage: typeof gc === "function" ? () => void gc() : undefined,
    signals: { add: (signal, handler) => process.on(signal, handler), remove: (signal, handler) => process.off(signal, handler) },
    exit: (code) => process.exit(code),
    setExitCode: (code) => void (process.exitCode = code),
  });
}
