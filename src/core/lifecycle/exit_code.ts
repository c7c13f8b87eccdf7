import type { DrainOutcome } from "./drain_outcome.ts";
import { isServeError } from "./serve_error.ts";

/**
 * The process exit code for each way serving can end. 2 is left out on purpose: shells
 * and many CLIs use it for usage errors, and a forced drain is not one.
 */
export const EXIT_CODES: Readonly<{ clean: 0; io: 1; forced: 3; flush: 4 }> = Object.freeze({
  clean: 0,
  io: 1,
  forced: 3,
  flush: 4,
});

/**
 * Maps what `runUntilDrained` settled with — an outcome, or the error it rejected with —
 * to an exit code: clean 0, forced 3, an `io` ServeError 1, a `flush` ServeError 4, and
 * any other error 1.
 *
 * @example Exiting with the drain's result
 * ```ts
 * import { exitCodeFor } from "serve-hygiene";
 * console.assert(exitCodeFor({ outcome: "forced", stillRunning: 2, drainedAt: 0, joinsPending: 0 }) === 3);
 * console.assert(exitCodeFor(new Error("boom")) === 1);
 * // const code = await runUntilDrained(server, controller).then(exitCodeFor, exitCodeFor);
 * ```
 */
export function exitCodeFor(result: unknown): number {
  if (isServeError(result)) return result.kind === "flush" ? EXIT_CODES.flush : EXIT_CODES.io;
  const outcome = (result as Partial<DrainOutcome> | null)?.outcome;
  if (!(result instanceof Error) && outcome === "clean") return EXIT_CODES.clean;
  if (!(result instanceof Error) && outcome === "forced") return EXIT_CODES.forced;
  return EXIT_CODES.io;
}
