// Refusals made by route-level code (Hono's rateLimit() and inFlightCap()) are reported
// through the same sinks as the guard's own (onDeny, onEvent: the shed logger, the
// exporter). The request's context carries the way there under a private symbol: it is not
// part of RequestContext, and user code has no name for it.
import type { HygieneEvent } from "../events.ts";

/**
 * The context's hook into its guard's sinks (internal: not exported from the package). A
 * registry symbol, as the route's helpers may come from another copy of the package.
 */
export const _REPORT: unique symbol = Symbol.for("serve-hygiene.report") as never;

/** What a context behind a guard offers under {@linkcode _REPORT}. */
export interface _Reporting {
  [_REPORT](event: HygieneEvent): void;
}

/**
 * How to report through the guard behind `context` (the adapter's or hygiene()'s), or
 * undefined when there is none: the caller then reports its own way.
 */
export function _reporterOf(context: unknown): ((event: HygieneEvent) => void) | undefined {
  const reporting = context as Partial<_Reporting> | null | undefined;
  if (typeof reporting?.[_REPORT] !== "function") return undefined;
  return (event) => reporting[_REPORT]!(event);
}

/**
 * The context's client key for route-level limits (internal, as `_REPORT`): the guard's key of
 * the request, or `false` when the guard's key function failed for it (its fault reported
 * once, by the guard).
 */
export const _ROUTE_KEY: unique symbol = Symbol.for("serve-hygiene.route-key") as never;

/** The guard's key behind `context` for a route: a string, `false` (failed), or undefined (no guard). */
export function _routeKeyOf(context: unknown): string | false | undefined {
  const c = context as { [_ROUTE_KEY]?: () => string | false; key?: unknown } | null | undefined;
  if (typeof c?.[_ROUTE_KEY] === "function") return c[_ROUTE_KEY]();
  return typeof c?.key === "string" ? c.key : undefined;
}
