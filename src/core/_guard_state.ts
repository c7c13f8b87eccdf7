// The process-wide state of a guard's gates, built from its options: the concurrency limit
// (adaptive unless a number is given) with its admission queue, the memory ceiling on the
// Host's readings, and the load monitor (on by default where a Host runs the server).
import type { Clock } from "./clock.ts";
import type { ResolvedConfig } from "./config.ts";
import type { Host } from "./host/host.ts";
import type { GuardOptions } from "./guard_types.ts";
import { type _ConcurrencyLimit, _createConcurrencyLimit, DEFAULT_SHED_WAIT_MS } from "./overload/concurrency_limit.ts";
import { type AdaptiveLimitOptions, createAdaptiveLimit } from "./overload/adaptive_limit.ts";
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
  const loadOption = _given(o.loadMonitor, host !== undefined);
  const load = loadOption === false
    ? undefined
    : createLoadMonitor({ ...(loadOption === true ? {} : _object(what, "loadMonitor", loadOption)), clock });
  const adaptive = config.concurrencyLimit;
  const concurrency = _createConcurrencyLimit({
    limit: typeof adaptive === "number"
      ? adaptive
      : createAdaptiveLimit(_adaptiveOptions(adaptive, host, clock, load)),
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
  return { concurrency, memory, load };
}

/** The adaptive limit's options: the user's, and where the Host reads the process's CPU time and none was given, `queueing` from it. */
export function _adaptiveOptions(options: AdaptiveLimitOptions, host: Host | undefined, clock: Clock, load: LoadMonitor | undefined): AdaptiveLimitOptions {
  return host?.cpuMs === undefined || options.queueing !== undefined ? options : { ...options, queueing: _queueing(host.cpuMs.bind(host), clock, load) };
}

/** The share of one core past which the process's work counts as queued for the CPU (the adaptive limit's `queueing`). */
export const _CPU_BUSY_SHARE = 0.9;

/**
 * Whether work queues in the process: it used at least 90 % of a core since the last reading
 * (JavaScript runs on one thread: past that, more work in flight only waits for it), or the load
 * monitor is busy (a CPU quota stalls the loop without the process using a whole core). Read once
 * a window of the adaptive limit, not per request. The event loop's delay alone did not tell: an
 * asynchronous CPU storm's loop reads on time between its bursts (its p99 rose from ~30 to ~58 ms).
 */
export function _queueing(cpuMs: () => number | undefined, clock: Clock, load: LoadMonitor | undefined): () => boolean {
  let wall = clock.now();
  let cpu = cpuMs() ?? NaN;
  let busy = true;
  return () => {
    if (load?.busy === true) return true;
    const now = clock.now();
    if (now - wall >= _CPU_READ_MS) {
      const used = cpuMs() ?? NaN;
      // A failed or backward reading says nothing: queueing, as without one.
      const share = (used - cpu) / (now - wall);
      busy = !(share >= 0 && share < _CPU_BUSY_SHARE);
      wall = now;
      cpu = used;
    }
    return busy;
  };
}

/** The shortest span a CPU share is read over (a window of the adaptive limit is at least 100 ms). */
const _CPU_READ_MS = 50;
