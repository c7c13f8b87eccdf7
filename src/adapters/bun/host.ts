import process from "node:process";
import { readFileSync } from "node:fs";
import { isMainThread } from "node:worker_threads";
import { _cgroupCores, _workerSignals, createHost, type Host, type Logger } from "../../core/mod.ts";

/** Options of {@linkcode createBunHost}. */
export interface BunHostOptions {
  /** Where install failures are logged. @default consoleLogger */
  log?: Logger | undefined;
}

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
export function createBunHost(options: BunHostOptions = {}): Host {
  const bun = (globalThis as { Bun?: { gc(force: boolean): void } }).Bun;
  return createHost({
    cloneResponses: true,
    log: options.log,
    rss: () => process.memoryUsage.rss(),
    setImmediate: (fn) => setImmediate(fn),
    clearImmediate: (id: ReturnType<typeof setImmediate>) => clearImmediate(id),
    collectGarbage: bun === undefined ? undefined : () => bun.gc(true),
    cpuMs: () => {
      const u = process.cpuUsage();
      return (u.user + u.system) / 1000;
    },
    cpuCores: () => _cgroupCores(_readText),
    signals: {
      add: (signal, handler) => {
        if (!isMainThread) throw _workerSignals();
        process.on(signal, handler);
      },
      remove: (signal, handler) => process.off(signal, handler),
    },
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
