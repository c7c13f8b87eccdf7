import type { Logger, ShutdownSignal } from "./host.ts";

/** The stop signals a Host listens for, in install order. */
export const SHUTDOWN_SIGNALS: readonly ShutdownSignal[] = Object.freeze(["SIGTERM", "SIGINT"]);

/** How a runtime adds and removes one signal listener; supplied by an adapter. */
export interface SignalApi {
  add(signal: ShutdownSignal, handler: () => void): void;
  remove(signal: ShutdownSignal, handler: () => void): void;
}

/**
 * Installs `listener` for every {@linkcode SHUTDOWN_SIGNALS} entry through `api`. A signal
 * whose install throws is logged and skipped — it never fires a shutdown and never
 * crashes the caller; when every install fails the process simply runs until killed.
 * Returns an uninstaller for the ones that took.
 */
/**
 * What a Host's `signals.add` throws inside a worker thread, where the runtime takes the
 * listener and never calls it (Node's worker_threads, Bun's Workers; Deno delivers them): the
 * install is logged, rather than a server that would never drain (a review).
 */
export function _workerSignals(): Error {
  return new Error(`signals are not delivered to a worker thread: give serve() a manual controller (createShutdownController({ mode: "manual" })) and call its shutdown() when the main thread says so (README: Worker threads)`);
}

export function installShutdownSignals(
  api: SignalApi,
  listener: (signal: ShutdownSignal) => void,
  log: Logger,
): () => void {
  const removers: (() => void)[] = [];
  for (const signal of SHUTDOWN_SIGNALS) {
    const handler = () => listener(signal);
    try {
      api.add(signal, handler);
      removers.push(() => api.remove(signal, handler));
    } catch (error) {
      log({ level: "error", msg: "signal handler install failed", signal, error });
    }
  }
  // A remove that throws is logged too: it replaced serve()'s drain outcome with its error, and
  // the next signal's listener stayed (a review).
  return () => {
    for (const remove of removers.splice(0)) {
      try {
        remove();
      } catch (error) {
        log({ level: "error", msg: "signal handler removal failed", error });
      }
    }
  };
}
