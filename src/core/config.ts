import { _durationMs, _object, _onlyKnown, _options, _positiveIntOrInfinity } from "./_validate.ts";
import { _ADAPTIVE_LIMIT_KEYS, type AdaptiveLimitOptions, createAdaptiveLimit } from "./overload/adaptive_limit.ts";
import { _bodyLimitCeiling, _resolveRouteBodyLimits, type RouteBodyLimit } from "./request/body_caps.ts";

/** The service-wide knobs. Every field is optional; {@linkcode resolveConfig} fills defaults. */
export interface ServeHygieneConfig {
  /**
   * Open connections the server accepts at once, where the runtime lets the adapter count
   * them. `Infinity` means uncapped.
   * @default 4096
   */
  maxConnections?: number | undefined;
  /**
   * Requests whose handlers may run at once. Left out (or given as the adaptive limiter's
   * options, `{ minLimit, maxLimit, … }`), the limit is found from handler latency
   * (`createAdaptiveLimit`); a number fixes it; `Infinity` means uncapped. Past the limit a
   * request waits in the bounded admission queue (`shedWaitMs`), then gets 503.
   * @default adaptive
   */
  concurrencyLimit?: number | AdaptiveLimitOptions | undefined;
  /**
   * Deadline of one request in milliseconds, answered 408. `Infinity` disables it. Must be
   * strictly below `drainTimeoutMs`, so a request admitted just before a stop signal reaches
   * its own deadline before the drain window ends.
   * @default 20000
   */
  requestTimeoutMs?: number | undefined;
  /**
   * Service-wide request body cap in bytes, applied before the handler runs. Undefined means
   * no service-wide cap; `routeBodyLimits` sets particular routes' caps, larger or smaller.
   * @default undefined
   */
  bodyLimitBytes?: number | undefined;
  /**
   * Time allowed for in-flight requests to finish after a stop signal, in milliseconds.
   * @default 25000
   */
  drainTimeoutMs?: number | undefined;
  /**
   * Body caps of particular routes, larger or smaller than `bodyLimitBytes`, applied before
   * the handler runs (a declared `Content-Length` over the cap is refused 413 whether or not
   * the handler reads the body). The first entry matching the request's method and path wins.
   * A route that raises its cap in the handler (Hono's `bodyLimit()`) must declare it here.
   * @default []
   */
  routeBodyLimits?: readonly RouteBodyLimit[] | undefined;
}

/** A validated {@linkcode ServeHygieneConfig} with every default applied. */
export interface ResolvedConfig {
  readonly maxConnections: number;
  /** A fixed limit, or the adaptive limiter's options (`{}`: its defaults). */
  readonly concurrencyLimit: number | Readonly<AdaptiveLimitOptions>;
  readonly requestTimeoutMs: number;
  readonly bodyLimitBytes: number | undefined;
  readonly drainTimeoutMs: number;
  readonly routeBodyLimits: readonly RouteBodyLimit[];
  /** The largest cap any request can get, or undefined when some request has none (a runtime's own ceiling follows it). */
  readonly bodyLimitCeiling: number | undefined;
}

/** The defaults of DESIGN.md. */
export const DEFAULT_CONFIG: ResolvedConfig = Object.freeze({
  maxConnections: 4096,
  concurrencyLimit: Object.freeze({}),
  requestTimeoutMs: 20_000,
  bodyLimitBytes: undefined,
  drainTimeoutMs: 25_000,
  routeBodyLimits: Object.freeze([]),
  bodyLimitCeiling: undefined,
});

const WHAT = "resolve config";

// A number (fixed, or Infinity), or the adaptive limiter's options, checked by building one once.
const _concurrencyLimit = (value: unknown): number | Readonly<AdaptiveLimitOptions> => {
  if (value === undefined) return DEFAULT_CONFIG.concurrencyLimit;
  if (typeof value === "object" && value !== null) {
    const options = _onlyKnown(WHAT, _object(WHAT, "concurrencyLimit", value as AdaptiveLimitOptions), _ADAPTIVE_LIMIT_KEYS, "concurrencyLimit");
    try {
      createAdaptiveLimit(options);
    } catch (error) {
      // Named after the config field, with the adaptive limiter's own reason.
      if (error instanceof RangeError) throw new RangeError(`Cannot ${WHAT} as "concurrencyLimit" is not a valid adaptive limit: ${error.message}`);
      throw error;
    }
    return Object.freeze({ ...options });
  }
  return _positiveIntOrInfinity(WHAT, "concurrencyLimit", value);
};

/**
 * Applies defaults and validates. Counts and durations are positive integers or `Infinity`;
 * anything else (0, negatives, NaN, fractions, strings, null) throws a `RangeError` naming
 * the field and the value. The request timeout must be strictly below the drain window
 * unless it is disabled (`Infinity`).
 *
 * @example Defaults
 * ```ts
 * import { resolveConfig } from "./config.ts";
 * const config = resolveConfig({ concurrencyLimit: 64 });
 * console.assert(config.requestTimeoutMs === 20_000);
 * console.assert(config.bodyLimitBytes === undefined);
 * ```
 */
export function resolveConfig(config?: ServeHygieneConfig): ResolvedConfig {
  const c = _options(WHAT, config);
  const field = <K extends Exclude<keyof ResolvedConfig, "routeBodyLimits" | "bodyLimitCeiling" | "concurrencyLimit">>(name: K): number | undefined => {
    const value = c[name];
    if (value === undefined) return DEFAULT_CONFIG[name];
    return name.endsWith("Ms") ? _durationMs(WHAT, name, value, { infinity: true }) : _positiveIntOrInfinity(WHAT, name, value);
  };
  const bodyLimitBytes = field("bodyLimitBytes");
  const routeBodyLimits = _resolveRouteBodyLimits(WHAT, c.routeBodyLimits);
  const resolved: ResolvedConfig = {
    maxConnections: field("maxConnections")!,
    concurrencyLimit: _concurrencyLimit(c.concurrencyLimit),
    requestTimeoutMs: field("requestTimeoutMs")!,
    bodyLimitBytes,
    drainTimeoutMs: field("drainTimeoutMs")!,
    routeBodyLimits,
    bodyLimitCeiling: _bodyLimitCeiling(bodyLimitBytes, routeBodyLimits),
  };
  if (resolved.requestTimeoutMs !== Infinity && resolved.requestTimeoutMs >= resolved.drainTimeoutMs) {
    throw new RangeError(
      `Cannot ${WHAT} as "requestTimeoutMs" must be below "drainTimeoutMs": ` +
        `current values are ${resolved.requestTimeoutMs} and ${resolved.drainTimeoutMs} ` +
        `(lengthen the drain window, shorten the request timeout, or disable it with Infinity)`,
    );
  }
  return Object.freeze(resolved);
}
