import { _cgroupCores, createHost, type Host, type Logger } from "../../core/mod.ts";

/** Options of {@linkcode createDenoHost}. */
export interface DenoHostOptions {
  /** Where install failures are logged. @default consoleLogger */
  log?: Logger | undefined;
}

/**
 * The Host for Deno: RSS from `Deno.memoryUsage().rss`, live memory as its heapUsed +
 * external (array buffers included), full collections through `globalThis.gc` when Deno
 * runs with `--v8-flags=--expose-gc`, SIGTERM/SIGINT through
 * `Deno.addSignalListener` (which throws on platforms without the signal: logged, never
 * fatal), timers unref'd with `Deno.unrefTimer`.
 *
 * @example
 * ```ts
 * import { createDenoHost } from "serve-hygiene/deno";
 * const host = createDenoHost();
 * const uninstall = host.onShutdownSignal((signal) => console.log("stopping on", signal));
 * uninstall();
 * ```
 */
export function createDenoHost(options: DenoHostOptions = {}): Host {
  const gc = (globalThis as { gc?: unknown }).gc;
  return createHost({
    cloneResponses: true,
    log: options.log,
    rss: () => Deno.memoryUsage().rss,
    liveBytes: () => {
      const m = Deno.memoryUsage();
      return m.heapUsed + m.external;
    },
    collectGarbage: typeof gc === "function" ? () => void gc() : undefined,
    // Deno 2's process global (node:process), getrusage underneath.
    cpuMs: () => {
      const u = (globalThis as unknown as { process: { cpuUsage(): { user: number; system: number } } }).process.cpuUsage();
      return (u.user + u.system) / 1000;
    },
    cpuCores: () => _cgroupCores(_readText),
    signals: {
      add: (signal, handler) => Deno.addSignalListener(signal, handler),
      remove: (signal, handler) => Deno.removeSignalListener(signal, handler),
    },
    exit: (code) => Deno.exit(code),
    setExitCode: (code) => void (Deno.exitCode = code),
    // A node:cluster worker's (a forked child's) IPC channel would keep it alive after the drain.
    ipcChannel: () => (globalThis as { process?: { channel?: { ref?(): void; unref?(): void } } }).process?.channel,
    unref: (id) => Deno.unrefTimer(id as number),
  });
}

// A small file's text where the process may already read it (asked of the permission state
// first: a read would prompt an interactive `deno run`), else undefined.
function _readText(path: string): string | undefined {
  try {
    if (Deno.permissions.querySync({ name: "read", path }).state !== "granted") return undefined;
    return Deno.readTextFileSync(path);
  } catch {
    return undefined;
  }
}
