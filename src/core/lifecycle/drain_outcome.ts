// The result of a drain, on its own: the drain produces it, ServeError carries it (a flush
// failure), exit codes read it. Kept apart so none of them imports another for its type.

/** How serving ended. */
export interface DrainOutcome {
  /** `clean`: everything finished in the window (or the server ended on its own). `forced`: the rest was force-closed. */
  readonly outcome: "clean" | "forced";
  /**
   * Handlers still running when the window ran out, and long-lived answers the guard tracks
   * (SSE, long polls) still streaming then (0 when clean, or when no `work` was given).
   */
  readonly stillRunning: number;
  /** What stopped it ("SIGTERM", "SIGINT", a manual reason); absent when the server ended on its own. */
  readonly reason?: string;
  /** `clock.now()` of the stop signal; absent when the server ended on its own. */
  readonly signalledAt?: number;
  /** `clock.now()` when the in-flight drain ended (before joins and the flush hook). */
  readonly drainedAt: number;
  /** Joined background tasks that had not settled when their share of the window ran out. */
  readonly joinsPending: number;
}
