import { _durationMs, _options, _given } from "../_validate.ts";

/** Options of {@linkcode validateLifecycle}. Durations in milliseconds. */
export interface LifecycleOptions {
  /** The per-request deadline; `Infinity` disables it (and its check). */
  requestTimeoutMs: number;
  /** The drain window counted from the stop signal. */
  drainTimeoutMs: number;
  /** Serving on (readiness failing) after the signal, inside the window. @default 0 */
  preStopDelayMs?: number | undefined;
  /** The platform's fixed grace before it kills the process (e.g. 10000), where one is declared. @default undefined */
  platformGraceMs?: number | undefined;
  /** Time reserved for the flush hook after the drain, inside the platform grace. @default 2000 */
  flushMarginMs?: number | undefined;
}

/** A validated {@linkcode LifecycleOptions} with defaults applied. */
export interface ResolvedLifecycle {
  readonly requestTimeoutMs: number;
  readonly drainTimeoutMs: number;
  readonly preStopDelayMs: number;
  readonly platformGraceMs: number | undefined;
  readonly flushMarginMs: number;
}

/** What a proxy site adds to its upstream timeout to get its drain window. */
export const PROXY_DRAIN_MARGIN_MS = 5_000;

const WHAT = "validate lifecycle";

function _below(a: string, av: number, b: string, bv: number, hint: string): void {
  if (av < bv) return;
  throw new RangeError(`Cannot ${WHAT} as "${a}" must be below "${b}": current values are ${av} and ${bv} (${hint})`);
}

/**
 * Checks the lifecycle timings together, at startup: the request timeout below the drain
 * window (unless disabled), and so the pre-stop delay plus the request timeout (requests are
 * still admitted during the delay), the pre-stop delay below the drain window, and — where the
 * platform declares a fixed grace period — drain plus flush margin within that grace.
 * Throws a `RangeError` naming the fields and the numbers.
 *
 * @example A platform with a 10 s grace needs a shorter drain
 * ```ts
 * import { validateLifecycle } from "./lifecycle_config.ts";
 * const ok = validateLifecycle({ requestTimeoutMs: 5_000, drainTimeoutMs: 8_000, platformGraceMs: 10_000 });
 * console.assert(ok.flushMarginMs === 2_000);
 * try {
 *   validateLifecycle({ requestTimeoutMs: 20_000, drainTimeoutMs: 25_000, platformGraceMs: 10_000 });
 *   console.assert(false);
 * } catch (error) {
 *   console.assert(error instanceof RangeError && error.message.includes("27000"));
 * }
 * ```
 */
export function validateLifecycle(options: LifecycleOptions): ResolvedLifecycle {
  const o = _options(WHAT, options);
  const requestTimeoutMs = _durationMs(WHAT, "requestTimeoutMs", o.requestTimeoutMs, { infinity: true });
  const drainTimeoutMs = _durationMs(WHAT, "drainTimeoutMs", o.drainTimeoutMs, { infinity: true });
  const preStopDelayMs = _durationMs(WHAT, "preStopDelayMs", _given(o.preStopDelayMs, 0), { zero: true });
  const platformGraceMs = o.platformGraceMs === undefined
    ? undefined
    : _durationMs(WHAT, "platformGraceMs", o.platformGraceMs);
  const flushMarginMs = _durationMs(WHAT, "flushMarginMs", _given(o.flushMarginMs, 2_000), { zero: true });

  _below("preStopDelayMs", preStopDelayMs, "drainTimeoutMs", drainTimeoutMs,
    "the delay is spent inside the drain window");
  if (requestTimeoutMs !== Infinity) {
    _below("requestTimeoutMs", requestTimeoutMs, "drainTimeoutMs", drainTimeoutMs,
      "lengthen the drain window, shorten the request timeout, or disable it with Infinity");
    // Requests are still admitted during the pre-stop delay, and the window counts from the
    // signal: one admitted at the delay's end must reach its own deadline inside it too.
    if (preStopDelayMs > 0 && !(preStopDelayMs + requestTimeoutMs < drainTimeoutMs)) {
      throw new RangeError(
        `Cannot ${WHAT} as "preStopDelayMs" + "requestTimeoutMs" must be below "drainTimeoutMs": ` +
          `current values are ${preStopDelayMs} + ${requestTimeoutMs} = ${preStopDelayMs + requestTimeoutMs} and ${drainTimeoutMs} ` +
          `(requests are still admitted during the pre-stop delay, and one admitted at its end must reach its own deadline inside the drain window: ` +
          `lengthen the drain window, or shorten the delay or the request timeout)`,
      );
    }
  }
  if (platformGraceMs !== undefined && drainTimeoutMs + flushMarginMs > platformGraceMs) {
    throw new RangeError(
      `Cannot ${WHAT} as "drainTimeoutMs" + "flushMarginMs" must fit inside "platformGraceMs": ` +
        `current values are ${drainTimeoutMs} + ${flushMarginMs} = ${drainTimeoutMs + flushMarginMs} and ${platformGraceMs} ` +
        `(the platform kills the process after its grace period)`,
    );
  }
  return Object.freeze({ requestTimeoutMs, drainTimeoutMs, preStopDelayMs, platformGraceMs, flushMarginMs });
}

/**
 * The drain window for a proxy site that disables its own request timeout: the upstream
 * timeout plus {@linkcode PROXY_DRAIN_MARGIN_MS}, so a proxied request admitted just before
 * the signal can still get its upstream answer (or the upstream's timeout) inside the drain.
 *
 * @example
 * ```ts
 * import { drainForProxy, validateLifecycle } from "./lifecycle_config.ts";
 * const drainTimeoutMs = drainForProxy(30_000);
 * console.assert(drainTimeoutMs === 35_000);
 * validateLifecycle({ requestTimeoutMs: Infinity, drainTimeoutMs });
 * ```
 */
export function drainForProxy(upstreamTimeoutMs: number): number {
  return _durationMs("derive proxy drain", "upstreamTimeoutMs", upstreamTimeoutMs) + PROXY_DRAIN_MARGIN_MS;
}
