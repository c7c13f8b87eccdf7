// The process-wide state of a guard's gates, built from its options: the concurrency limit
// (adaptive unless a number is given) with its admission queue, the memory ceiling on the
// Host's readings, and the load monitor (on by default where a Host runs the server).
import type { Clock } from "./clock.ts";
import type { ResolvedConfig } from "./config.ts";
import type { Host } from "./host/host.ts";
import type { GuardOptions } from "./guard_types.ts";
import { type _ConcurrencyLimit, _createConcurrencyLimit, DEFAULT_SHED_WAIT_MS } from "./overload/concurrency_limit.ts";
import { createAdaptiveLimit } from "./overload/adaptive_limit.ts";
import { createLoadMonitor, type LoadMonitor } from "./overload/load_monitor.ts";
import { createMemoryCeiling, type MemoryCeiling } from "./overload/memory_ceiling.ts";
import { _durationMs, _given, _object } from "./_validate.ts";

/** The guard's process-wide state objects; memory and load are absent when turned off. */
export interface _ProcessGates {
  readonly concurrency: _ConcurrencyLimit;
  readonly memory: MemoryCeiling | undefined;
  readonly load: LoadMonitor | undefined;
}

/** Builds them; `what` names the factory in validation errors. */
export function _processGates(what: string, o: GuardOptions, config: ResolvedConfig, clock: Clock, host: Host | undefined): _ProcessGates {
  const concurrency = _createConcurrencyLimit({
    limit: typeof config.concurrencyLimit === "number" ? config.concurrencyLimit : createAdaptiveLimit(config.concurrencyLimit),
    shedWaitMs: _durationMs(what, "shedWaitMs", _given(o.shedWaitMs, DEFAULT_SHED_WAIT_MS), { zero: true }),
    maxWaiting: o.maxWaiting,
    lifoAfterMs: o.lifoAfterMs,
    standingWaitMs: o.standingWaitMs,
    clock,
  });
  const memory = o.memory === undefined
    ? undefined
    : createMemoryCeiling({
      ..._object(what, "memory", o.memory),
      rss: host?.rss,
      live: host?.liveBytes === undefined ? undefined : () => host.liveBytes!(),
      collectGarbage: host?.collectGarbage === undefined ? undefined : () => host.collectGarbage!(),
      clock,
      onEvent: o.onEvent,
    });
  const loadOption = _given(o.loadMonitor, host !== undefined);
  const load = loadOption === false
    ? undefined
    : createLoadMonitor({ ...(loadOption === true ? {} : _object(what, "loadMonitor", loadOption)), clock });
  return { concurrency, memory, load };
}
