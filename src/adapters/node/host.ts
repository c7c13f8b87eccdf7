import process from "node:process";
import { readFileSync } from "node:fs";
import { isMainThread } from "node:worker_threads";
import { _cgroupCores, _workerSignals, createHost, type Host, type Logger, type ShutdownSignal } from "../../core/mod.ts";

// One process listener a signal, whatever the number of Hosts listening: each serve() has its
// own controller, and twelve servers in one process (a test runner's, an embedder's) made
// twelve SIGTERM and SIGINT listeners and node's MaxListenersExceededWarning (a review).
const _handlers = new Map<string, Set<() => void>>();
const _listeners = new Map<string, () => void>();
const _processSignals = {
  add(signal: ShutdownSignal, handler: () => void): void {
    if (!isMainThread) throw _workerSignals();
    let handlers = _handlers.get(signal);
    if (handlers === undefined) _handlers.set(signal, (handlers = new Set()));
    if (handlers.size === 0) {
      const listener = () => {
        for (const h of [...handlers!]) h();
      };
      process.on(signal, listener);
      _listeners.set(signal, listener);
    }
    handlers.add(handler);
  },
  remove(signal: ShutdownSignal, handler: () => void): void {
    const handlers = _handlers.get(signal);
    if (handlers === undefined || !handlers.delete(handler) || handlers.size > 0) return;
    process.off(signal, _listeners.get(signal)!);
    _listeners.delete(signal);
  },
};

/** Options of {@linkcode createNodeHost}. */
export interface NodeHostOptions {
  /** Where install failures are logged. @default consoleLogger */
  log?: Logger | undefined;
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
    cpuMs: () => {
      const u = process.cpuUsage();
      return (u.user + u.system) / 1000;
    },
    cpuCores: () => _cgroupCores(_readText),
    signals: _processSignals,
    exit: (code) => process.exit(code),
    setExitCode: (code) => void (process.exitCode = code),
    // A cluster worker's (a forked child's) IPC channel would keep it alive after the drain.
    ipcChannel: () => (process as { channel?: { ref?(): void; unref?(): void } }).channel,
  });
}

// A small file's text, or undefined (absent, unreadable).
function _readText(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return undefined;
  }
}
