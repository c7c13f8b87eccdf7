// The Host of runtimes that implement Node's `process` object (Node and Bun). Bun's
// adapter reuses it: both read RSS from process.memoryUsage.rss() and take signals
// through process.on, so one implementation serves both.
import process from "node:process";
import { consoleLogger, createSystemClock, type Host, installShutdownSignals, type Logger } from "../../core/mod.ts";

/** Options of {@linkcode createProcessHost}. */
export interface ProcessHostOptions {
  /** Where install failures are logged. @default consoleLogger */
  log?: Logger;
}

export function createProcessHost(options: ProcessHostOptions = {}): Host {
  const log = options.log ?? consoleLogger;
  return {
    clock: createSystemClock(),
    log,
    rss: () => process.memoryUsage.rss(),
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
