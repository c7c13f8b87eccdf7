// The Host of runtimes that implement Node's `process` object (Node and Bun). Bun's
// adapter reuses it: both read RSS from process.memoryUsage.rss() and take signals
// through process.on, so one implementation serves both. What differs is injected: how
// live memory is read from process.memoryUsage() and how a collection is asked for.
import process from "node:process";
import { consoleLogger, createSystemClock, type Host, installShutdownSignals, type Logger } from "../../core/mod.ts";

/** Options of {@linkcode createProcessHost}. */
export interface ProcessHostOptions {
  /** Where install failures are logged. @default consoleLogger */
  log?: Logger;
}

/** What the runtime adds to the shared process Host (internal): its live-memory reading and collector. */
export interface _ProcessMemory {
  liveBytes?: () => number;
  collectGarbage?: () => void;
}

/** V8 (Node): heap used + external (external includes array buffers). */
export const _v8Live = (): number => {
  const m = process.memoryUsage();
  return m.heapUsed + m.external;
};

/** `globalThis.gc` where the process was started with --expose-gc (V8), else undefined. */
export function _exposedGc(): (() => void) | undefined {
  const gc = (globalThis as { gc?: unknown }).gc;
  return typeof gc === "function" ? () => void gc() : undefined;
}

export function createProcessHost(options: ProcessHostOptions = {}, memory?: _ProcessMemory): Host {
  const log = options.log ?? consoleLogger;
  const live = memory ?? { liveBytes: _v8Live, collectGarbage: _exposedGc() };
  return {
    clock: createSystemClock(),
    log,
    rss: () => process.memoryUsage.rss(),
    ...(live.liveBytes === undefined ? {} : { liveBytes: live.liveBytes }),
    ...(live.collectGarbage === undefined ? {} : { collectGarbage: live.collectGarbage }),
    exit: (code) => process.exit(code),
    setExitCode: (code) => void (process.exitCode = code),
    onShutdownSignal: (listener) =>
      installShutdownSignals(
        { add: (signal, handler) => process.on(signal, handler), remove: (signal, handler) => process.off(signal, handler) },
        listener,
        log,
      ),
  };
}
