// The options createGuard takes, by name: a key it does not list is refused when the guard is
// built (_validate.ts `_onlyKnown`; serve() lists its own beside them). Typed as the options
// type's key list, so an option added to the type without its name here fails to compile.
import type { _KeyList } from "./_validate.ts";
import type { GuardOptions } from "./guard_types.ts";

/** Every option of {@linkcode GuardOptions} (and of `hygiene()`). */
export const _GUARD_KEYS: _KeyList<GuardOptions> = Object.freeze({
  maxConnections: true,
  concurrencyLimit: true,
  requestTimeoutMs: true,
  bodyLimitBytes: true,
  drainTimeoutMs: true,
  routeBodyLimits: true,
  rateLimits: true,
  inFlightPerKey: true,
  clientKey: true,
  rateLimitHeaders: true,
  shedWaitMs: true,
  maxWaiting: true,
  lifoAfterMs: true,
  standingWaitMs: true,
  memory: true,
  exempt: true,
  loadMonitor: true,
  shutdown: true,
  stopping: true,
  onDeny: true,
  refusalHeaders: true,
  onError: true,
  onEvent: true,
  clock: true,
  log: true,
});

/** The guard's `memory` option's own keys. */
export const _MEMORY_KEYS: _KeyList<NonNullable<GuardOptions["memory"]>> = Object.freeze({ ceilingBytes: true, intervalMs: true, resumeBelowBytes: true, collect: true });

/** `keys` without `drop` (serve() takes the guard's options but the two it sets itself). */
export function _without<T extends object, K extends keyof T>(keys: T, ...drop: K[]): Omit<T, K> {
  const rest: Partial<T> = { ...keys };
  for (const k of drop) delete rest[k];
  return rest as Omit<T, K>;
}
