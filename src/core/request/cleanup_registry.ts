import { consoleLogger, type Logger } from "../host/host.ts";
import { _safeLogger } from "../_user_code.ts";

/** One cleanup: told why the request was abandoned. May be async; a failure is logged. */
export type AbandonCleanup = (reason: unknown) => void | Promise<void>;

/** The cleanups of one request, run exactly once if it is abandoned before its work finished. */
export interface CleanupRegistry {
  /**
   * Registers a cleanup; returns its unregisterer. Added after the request was abandoned,
   * it runs at once (the resource it guards is already orphaned); added after
   * `complete()`, it is dropped.
   */
  add(cleanup: AbandonCleanup): () => void;
  /**
   * The request was abandoned (client disconnect, timeout, forced drain): runs every
   * registered cleanup once, newest first. A no-op after the first call or after `complete()`.
   */
  abandon(reason: unknown): void;
  /** The work finished: drops the cleanups; a later `abandon` is a no-op. */
  complete(): void;
  /** Whether `abandon` ran before `complete`. */
  readonly abandoned: boolean;
}

/**
 * Creates a per-request cleanup registry. Every cleanup runs at most once, even when two
 * causes abandon the same request (its timeout, then a forced drain). A cleanup that
 * throws or rejects is logged and does not stop the others; nothing escapes to the caller.
 *
 * @example Releasing a resource when the client goes away
 * ```ts
 * import { createCleanupRegistry } from "./cleanup_registry.ts";
 * const cleanups = createCleanupRegistry();
 * let released = 0;
 * cleanups.add(() => void released++);
 * cleanups.abandon(new DOMException("client went away", "AbortError"));
 * cleanups.abandon("forced drain");
 * console.assert(released === 1 && cleanups.abandoned);
 * ```
 */
export function createCleanupRegistry(logger: Logger = consoleLogger): CleanupRegistry {
  const log = _safeLogger(logger);
  let state: "open" | "abandoned" | "completed" = "open";
  let why: unknown;
  // Entries, not the functions: the same function added twice unregisters one at a time.
  let cleanups: { cleanup: AbandonCleanup }[] = [];

  const run = (cleanup: AbandonCleanup) => {
    const failed = (error: unknown) => log({ level: "error", msg: "abandon cleanup failed", error });
    try {
      const result = cleanup(why);
      if (typeof (result as PromiseLike<void> | undefined)?.then === "function") {
        Promise.resolve(result).catch(failed);
      }
    } catch (error) {
      failed(error);
    }
  };

  return {
    add(cleanup) {
      if (state === "completed") return () => {};
      if (state === "abandoned") {
        run(cleanup);
        return () => {};
      }
      const entry = { cleanup };
      cleanups.push(entry);
      return () => {
        const i = cleanups.indexOf(entry);
        if (i !== -1) cleanups.splice(i, 1);
      };
    },
    abandon(reason) {
      if (state !== "open") return;
      state = "abandoned";
      why = reason;
      const taken = cleanups;
      cleanups = [];
      for (let i = taken.length - 1; i >= 0; i--) run(taken[i]!.cleanup);
    },
    complete() {
      if (state !== "open") return;
      state = "completed";
      cleanups = [];
    },
    get abandoned() {
      return state === "abandoned";
    },
  };
}
