// The process-wide state of a guard's gates, built from its options: the concurrency limit
// (adaptive unless a number is given) with its admission queue, the memory ceiling on the
// Host's readings, and the load monitor (on by default where a Host runs the server).
import type { Clock } from "./clock.ts";
import type { ResolvedConfig } from "./config.ts";
import { consoleLogger, type Host, type Logger } from "./host/host.ts";
import { _safeLogger } from "./_user_code.ts";
import type { GuardOptions } from "./guard_types.ts";
import { type _ConcurrencyLimit, _createConcurrencyLimit, DEFAULT_SHED_WAIT_MS } from "./overload/concurrency_limit.ts";
import { type AdaptiveLimitOptions, createAdaptiveLimit } from "./overload/adaptive_limit.ts";
import { _LOAD_MONITOR_KEYS, createLoadMonitor, type LoadMonitor } from "./overload/load_monitor.ts";
import { createMemoryCeiling, type MemoryCeiling } from "./overload/memory_ceiling.ts";
import { _durationMs, _given, _object, _onlyKnown } from "./_validate.ts";
import { _MEMORY_KEYS } from "./_option_keys.ts";

/** The guard's process-wide state objects; memory and load are absent when turned off. */
export interface _ProcessGates {
  readonly concurrency: _ConcurrencyLimit;
  readonly memory: MemoryCeiling | undefined;
  readonly load: LoadMonitor | undefined;
  /**
   * Whether the process has CPU to spare (under 70 % of what it may use over its last span of at
   * least half a second); absent without the Host's CPU reading. See {@linkcode _cpuSpare}.
   */
  readonly spare: _Spare | undefined;
}

/** Builds them; `what` names the factory in validation errors. */
export function _processGates(what: string, o: GuardOptions, config: ResolvedConfig, clock: Clock, host: Host | undefined): _ProcessGates {
  const loadOption = _given(o.loadMonitor, host !== undefined);
  const load = loadOption === false
    ? undefined
    : createLoadMonitor({ ...(loadOption === true ? {} : _onlyKnown(what, _object(what, "loadMonitor", loadOption), _LOAD_MONITOR_KEYS, "loadMonitor")), clock });
  const adaptive = config.concurrencyLimit;
  const concurrency = _createConcurrencyLimit({
    limit: typeof adaptive === "number"
      ? adaptive
      : createAdaptiveLimit(_adaptiveOptions(adaptive, host, clock, load, _safeLogger(o.log ?? host?.log ?? consoleLogger))),
    shedWaitMs: _durationMs(what, "shedWaitMs", _given(o.shedWaitMs, DEFAULT_SHED_WAIT_MS), { zero: true }),
    maxWaiting: o.maxWaiting,
    lifoAfterMs: o.lifoAfterMs,
    standingWaitMs: o.standingWaitMs,
    clock,
  });
  const memory = o.memory === undefined
    ? undefined
    : createMemoryCeiling({
      ..._onlyKnown(what, _object(what, "memory", o.memory), _MEMORY_KEYS, "memory"),
      rss: host?.rss,
      live: host?.liveBytes === undefined ? undefined : () => host.liveBytes!(),
      collectGarbage: host?.collectGarbage === undefined ? undefined : () => host.collectGarbage!(),
      clock,
      onEvent: o.onEvent,
    });
  const spare = load === undefined || host?.cpuMs === undefined ? undefined : _cpuSpare(host.cpuMs.bind(host), clock, _cores(host));
  return { concurrency, memory, load, spare };
}

/** The adaptive limit's options: the user's, and where the Host reads the process's CPU time and none was given, `queueing` and `idle` from it. */
export function _adaptiveOptions(options: AdaptiveLimitOptions, host: Host | undefined, clock: Clock, load: LoadMonitor | undefined, log?: Logger): AdaptiveLimitOptions {
  if (host?.cpuMs === undefined || options.queueing !== undefined || options.idle !== undefined) return options;
  const cores = _cores(host);
  // One reading serves both: the CPU time is read once a span, not once a predicate.
  const share = _cpuShare(host.cpuMs.bind(host), clock, log);
  // And it is taken at every probe of the load monitor (which runs while requests arrive), so a
  // window closed by requests that took over a second reads the share over its last span, not
  // over one longer than a second, read as unknown: a brownout of an upstream at 2 s halved the
  // limit at every window on a nearly idle core, and the requests beside it (a fast route, 50 a
  // second) waited out the whole wait bound again and again (a review: p99 ~500 ms, 12 ms
  // without the library). The probe stops a second after the last request: the reading is then
  // forgotten, so the first after that idle spell is unknown, as before (read on at the quiet
  // second's probes, a storm after an idle spell of 1.2-1.9 s read the spell as spare).
  load?.onTurn(() => (load.running ? void share() : share.forget()));
  const notIdle = _over(share, load, _CPU_IDLE_SHARE * cores);
  return { ...options, queueing: _over(share, load, _CPU_BUSY_SHARE * cores), idle: () => !notIdle() };
}

/**
 * The share of the CPU it may use past which the process's work counts as queued for it (the
 * adaptive limit's `queueing`). Not 0.9: Deno's I/O-bound storm settled at 72 % of a core with
 * its loop holding turns, read as CPU to spare, at 0.83 of its goodput (0.7: as before the rule).
 */
export const _CPU_BUSY_SHARE = 0.7;
/**
 * The share under which the process counts as mostly idle (the adaptive limit's `idle`): a
 * request whose wait bound comes is then admitted over the limit. At "not queueing" (under 90 %)
 * an I/O-bound storm at 86 % of a core admitted its 500 ms waiters, and its goodput fell to 0.84–0.87.
 */
export const _CPU_IDLE_SHARE = 0.5;

// The Host's CPU quota in cores, at most one (JavaScript runs on one thread); a whole core when
// it has none, cannot tell, or fails.
function _cores(host: Host): number {
  try {
    const cores = host.cpuCores?.();
    return typeof cores === "number" && cores > 0 && cores < 1 ? cores : 1;
  } catch {
    return 1;
  }
}

/**
 * Whether work queues in the process: it used at least 70 % of the CPU it may use (a core, or
 * its cgroup quota below one) since the last reading — JavaScript runs on one thread: past
 * that, more work in flight only waits for it — or the load monitor is busy. Read once a window
 * of the adaptive limit, not per request. A reading that fails, goes back, or spans a long
 * idle spell says queueing, as without one (see {@linkcode _cpuShare}). The event loop's delay
 * alone did not tell: an asynchronous CPU storm's loop reads on time between its bursts (its
 * p99 rose from ~30 to ~58 ms).
 */
export function _queueing(cpuMs: () => number | undefined, clock: Clock, load: LoadMonitor | undefined, cores = 1, log?: Logger, threshold = _CPU_BUSY_SHARE): () => boolean {
  return _over(_cpuShare(cpuMs, clock, log), load, threshold * cores);
}

// At or past `limit` of a core (or not known), or the load monitor busy. The share is read first,
// busy or not: each ask may start its next span.
const _over = (share: () => number, load: LoadMonitor | undefined, limit: number) => (): boolean => !(share() < limit) || load?.busy === true;

/**
 * Whether the process used under 70 % of the CPU it may use over its last span of at least half
 * a second (false when that cannot be told: before the first span, a reading that failed, a
 * span over a second, or the first reading after `forget()` — the load gate forgets it when
 * the load monitor's probe stops, a second after the last request). Until a half-second reading exists, one over
 * 100 ms stands in, so a burst after such a spell is read within 100 ms. Where the load gate
 * holds its refusals (no later turn: Deno) it reads this at each probe, and while some are held
 * and the process has CPU to spare, a request held for the loop's delay (a stall, or the share
 * lowered after one) starts then, whatever the share — the delay is not work queueing for the
 * CPU but a pause in it (a garbage collection, one long handler), and the share's recovery
 * would hold it for nothing. Measured on Deno (handlers building and parsing 1 MB of JSON at 20
 * requests a second, ~35 % of a core, each followed by a 40–75 ms pause,
 * `scripts/probes/gc_pauses.ts`): before, a 503 after a 500 ms hold in 3 of 5 runs and p99
 * 167–510 ms. Half a second, not the adaptive limit's 100 ms: a span holding one pause must not
 * read as a busy core.
 */
export function _cpuSpare(cpuMs: () => number | undefined, clock: Clock, cores = 1): _Spare {
  const share = _cpuShare(cpuMs, clock, undefined, _CPU_SPARE_SPAN_MS, _CPU_READ_MS);
  return Object.assign(() => share() < _CPU_BUSY_SHARE * cores, { forget: share.forget, idle: () => share() < _CPU_IDLE_SHARE * cores });
}

/**
 * {@linkcode _cpuSpare}'s reading; `forget()` makes the next one unknown (no CPU to spare);
 * `idle()`: the process mostly idle (under half of what it may use), not merely short of busy.
 */
export type _Spare = (() => boolean) & { forget?(): void; idle?(): boolean };

/** The shortest span {@linkcode _cpuSpare} reads the CPU share over. */
const _CPU_SPARE_SPAN_MS = 500;

/**
 * The share of a core the process used over its last span of at least 100 ms (read when asked,
 * at most once a span), or NaN when it cannot be told: before the first span, a reading that
 * failed (logged once) or went back, or a span over a second (an idle spell before a storm: a
 * storm's first window would read the idle time as spare).
 */
function _cpuShare(cpuMs: () => number | undefined, clock: Clock, log?: Logger, minSpanMs = _CPU_READ_MS, firstSpanMs = minSpanMs): _Share {
  let failed = false;
  const read = (): number => {
    try {
      return cpuMs() ?? NaN;
    } catch (error) {
      // The Host's own failure: logged once, then read as unknown (queueing, as without a reading).
      if (log !== undefined && !failed) log({ level: "warn", msg: "reading the process's CPU time failed; the adaptive limit reads every slower window as queueing", error });
      failed = true;
      return NaN;
    }
  };
  let wall = clock.now();
  let cpu = read();
  let last = NaN;
  const reading = () => {
    const now = clock.now();
    const span = now - wall;
    // While nothing is known (`last` NaN) a reading over `firstSpanMs` stands in.
    if (span >= (last === last ? minSpanMs : firstSpanMs)) {
      const used = read();
      const share = (used - cpu) / span;
      last = share >= 0 && span <= _CPU_SPAN_MAX_MS ? share : NaN;
      wall = now;
      cpu = used;
    }
    return last;
  };
  // The next reading spans over a second: unknown, and it starts a new span.
  return Object.assign(reading, { forget: () => void (wall = -Infinity) });
}

/** A CPU share reading (see {@linkcode _cpuShare}); `forget()` makes the next one unknown. */
type _Share = (() => number) & { forget(): void };

/**
 * The shortest span a CPU share is read over: the adaptive limit's default window. Asked at every
 * wait's start as well as once a window, a storm's share is still read over a window's span.
 */
const _CPU_READ_MS = 100;
/** The longest: a share over a longer span (an idle spell before a storm) is not read as spare. */
const _CPU_SPAN_MAX_MS = 1_000;
