import { _hasCode, HygieneError } from "../errors.ts";
import type { DrainOutcome } from "./drain_outcome.ts";

/** What failed: the server while serving (`io`), or the flush hook after the drain (`flush`). */
export type ServeErrorKind = "io" | "flush";

/** The stable codes of {@linkcode ServeError}, one per kind. */
export type ServeErrorCode = "SERVE_IO" | "SERVE_FLUSH";

const CODES: Readonly<Record<ServeErrorKind, ServeErrorCode>> = Object.freeze({ io: "SERVE_IO", flush: "SERVE_FLUSH" });

function _describe(cause: unknown): string {
  return cause instanceof Error ? cause.message : String(cause);
}

/**
 * Why serving ended badly. `io`: the server failed on its own (it could not listen — `serve()`
 * rejects with it — or its listener failed while serving) and nothing was drained. `flush`: the drain finished, then the `onDrained` hook threw or
 * rejected; `outcome` says how the drain itself went. The original error is `cause`.
 *
 * @example Telling the kinds apart
 * ```ts
 * import { isServeError, ServeError } from "serve-hygiene";
 * const error = new ServeError("flush", new Error("exporter down"));
 * console.assert(isServeError(error) && error.kind === "flush" && error.code === "SERVE_FLUSH");
 * ```
 */
export class ServeError extends HygieneError {
  declare readonly code: ServeErrorCode;
  readonly kind: ServeErrorKind;
  /** For `flush`: the outcome of the drain that ran before the hook failed. */
  readonly outcome: DrainOutcome | undefined;

  constructor(kind: ServeErrorKind, cause: unknown, outcome?: DrainOutcome) {
    const what = kind === "io" ? "Server failed" : "Flush hook (onDrained) failed after the drain";
    super(CODES[kind], `${what}: ${_describe(cause)}`, { cause });
    this.name = new.target === ServeError ? "ServeError" : new.target.name;
    this.kind = kind;
    this.outcome = outcome;
  }
}

/**
 * Whether `error` is a {@linkcode ServeError} of either kind, from this copy of the
 * package or another.
 *
 * @example
 * ```ts
 * import { isServeError, ServeError } from "serve-hygiene";
 * console.assert(isServeError(new ServeError("io", new Error("EADDRINUSE"))));
 * console.assert(!isServeError(new Error("other")));
 * ```
 */
export function isServeError(error: unknown): error is ServeError {
  return (_hasCode<ServeError>(error, "SERVE_IO") || _hasCode<ServeError>(error, "SERVE_FLUSH")) && ((error as ServeError).kind === "io" || (error as ServeError).kind === "flush");
}
