import type { Clock, TimerHandle } from "../clock.ts";
import { systemClock } from "../clock.ts";
import type { EventSink } from "../events.ts";
import { _emit } from "../_emit.ts";
import { _durationMs, _given, _optionalBoolean, _options, _positiveInt, _show, type _KeyList } from "../_validate.ts";

/** Options of {@linkcode createMemoryCeiling}. */
export interface MemoryCeilingOptions {
  /** Shed new requests while the memory in use (see `live`) is above this many bytes. */
  ceilingBytes: number;
  /** Reads RSS in bytes; undefined (serverless, no reader) turns the ceiling off. */
  rss: (() => number | undefined) | undefined;
  /**
   * Reads live memory in bytes: what the runtime's heaps still hold (the Host's
   * `liveBytes`). With it, the figure compared with the ceiling is RSS capped at live
   * memory plus the process's own footprint (RSS minus live memory at the first reading),
   * so pages the runtime keeps after freeing them (V8, malloc) do not hold the gate shut.
   * Without it the figure is RSS.
   */
  live?: (() => number | undefined) | undefined;
  /** Runs a full collection (the Host's `collectGarbage`), so garbage is not counted as live. */
  collectGarbage?: (() => void) | undefined;
  /**
   * Collect once before deciding, whenever a sample is over the mark that matters
   * (the ceiling, or the resume mark while shedding) and a collector is given.
   * @default true
   */
  collect?: boolean | undefined;
  /**
   * How often memory is read. A read costs 10–18 µs, so it happens on a timer, never per
   * request; the timer never keeps the process alive.
   * @default 30000
   */
  intervalMs?: number | undefined;
  /** Shedding clears once the figure falls to this or below. @default ceilingBytes */
  resumeBelowBytes?: number | undefined;
  /** @default systemClock */
  clock?: Clock | undefined;
  /** Told when a read or a collection throws (the ceiling then fails open). */
  onEvent?: EventSink | undefined;
}

/** Gate 2: one boolean, set by a sampler, read per request. */
export interface MemoryCeiling {
  /** True while memory in use is above the ceiling. Fails open: false when off, disposed or unreadable. */
  readonly shedding: boolean;
  /** The last RSS read, in bytes. */
  readonly lastRss: number | undefined;
  /** The last live-memory read, in bytes (undefined without a reader). */
  readonly lastLive: number | undefined;
  /** The figure the flag was last decided on: RSS, capped at live memory plus footprint. */
  readonly lastEstimate: number | undefined;
  readonly ceilingBytes: number;
  /** Reads memory now and updates the flag (the timer calls this). */
  sample(): void;
  /** Stops the sampler at once; the ceiling reads "not shedding" from then on. */
  dispose(): void;
}

function _fnOrUndefined<T>(what: string, field: string, value: T): T {
  if (value !== undefined && typeof value !== "function") {
    throw new TypeError(`Cannot ${what} as "${field}" must be a function: current value is ${_show(value)}`);
  }
  return value;
}

/** Every option of {@linkcode MemoryCeilingOptions}: any other key is refused (_validate.ts `_onlyKnown`). */
const MEMORY_CEILING_KEYS: _KeyList<MemoryCeilingOptions> = { ceilingBytes: true, rss: true, live: true, collectGarbage: true, collect: true, intervalMs: true, resumeBelowBytes: true, clock: true, onEvent: true };

/**
 * The memory ceiling. Off (never shedding, no timer) when no RSS reader is given.
 *
 * Raise and clear compare one figure with the marks: RSS, but never more than live memory
 * plus the footprint the process had at its first reading. RSS alone would never clear on
 * Node and Deno, whose allocators keep freed pages; live memory falls once a collection runs,
 * which is why a sample over the mark collects first where the Host can.
 *
 * @example
 * ```ts
 * import { createManualClock } from "serve-hygiene";
 * import { createMemoryCeiling } from "./memory_ceiling.ts";
 * let rss = 100;
 * let live = 40;
 * const clock = createManualClock();
 * const ceiling = createMemoryCeiling({ ceilingBytes: 150, rss: () => rss, live: () => live, intervalMs: 1000, clock });
 * rss = 200;
 * live = 140;
 * clock.advance(1000);
 * console.assert(ceiling.shedding);
 * live = 40; // freed and collected; RSS stays at 200
 * clock.advance(1000);
 * console.assert(!ceiling.shedding);
 * ceiling.dispose();
 * ```
 */
export function createMemoryCeiling(options: MemoryCeilingOptions): MemoryCeiling {
  const what = "create memory ceiling";
  const o = _options(what, options, MEMORY_CEILING_KEYS);
  const ceilingBytes = _positiveInt(what, "ceilingBytes", o.ceilingBytes);
  const intervalMs = _durationMs(what, "intervalMs", _given(o.intervalMs, 30_000));
  const resumeBelow = _positiveInt(what, "resumeBelowBytes", _given(o.resumeBelowBytes, ceilingBytes));
  if (resumeBelow > ceilingBytes) {
    throw new RangeError(
      `Cannot ${what} as "resumeBelowBytes" must not exceed "ceilingBytes": current values are ${resumeBelow} and ${ceilingBytes}`,
    );
  }
  const collect = _optionalBoolean(what, "collect", o.collect) ?? true;
  const readLive = _fnOrUndefined(what, "live", o.live);
  const collector = collect ? _fnOrUndefined(what, "collectGarbage", o.collectGarbage) : undefined;
  const read = o.rss;
  const clock = o.clock ?? systemClock;
  let shedding = false;
  let lastRss: number | undefined;
  let lastLive: number | undefined;
  let lastEstimate: number | undefined;
  /** RSS minus live memory at the first reading with both: code, runtime, stacks. */
  let footprint: number | undefined;
  let timer: TimerHandle | undefined;

  const fault = (error: unknown) => _emit([o.onEvent], { type: "fault", source: "memory-ceiling", error, failed: "open" });
  // `rss`: a reading of 0 is no reading (no live process has none): Deno's answers 0 when it
  // cannot read it (out of file descriptors, where Node and Bun throw).
  const _read = (reader: (() => number | undefined) | undefined, rss = false): number | undefined => {
    if (reader === undefined) return undefined;
    try {
      const value = reader();
      if (rss && value === 0) throw new Error("The RSS reading was 0: the runtime could not read it");
      if (value === undefined) return undefined;
      // Anything else but a count of bytes is a failed reading too, reported: NaN, a string
      // (a /proc line left unparsed), a negative number turned the ceiling off unseen (a review).
      if (typeof value !== "number" || !Number.isFinite(value) || value < 0) throw new Error(`The ${rss ? "RSS" : "live memory"} reading was ${_show(value)}: no count of bytes`);
      return value;
    } catch (error) {
      fault(error);
      return undefined;
    }
  };
  const measure = (): number | undefined => {
    lastRss = _read(read, true);
    lastLive = _read(readLive);
    if (lastRss === undefined || lastLive === undefined) return (lastEstimate = lastRss);
    footprint ??= Math.max(0, lastRss - lastLive);
    return (lastEstimate = Math.min(lastRss, lastLive + footprint));
  };

  const sample = () => {
    if (read === undefined || timer === undefined) return;
    let used = measure();
    if (collector !== undefined && used !== undefined && used > (shedding ? resumeBelow : ceilingBytes)) {
      try {
        collector();
      } catch (error) {
        fault(error);
      }
      used = measure();
    }
    if (used === undefined) shedding = false;
    else if (used > ceilingBytes) shedding = true;
    else if (used <= resumeBelow) shedding = false;
  };

  if (read !== undefined) {
    timer = clock.setInterval(sample, intervalMs, { unref: true });
    sample();
  }

  return {
    get shedding() {
      return shedding;
    },
    get lastRss() {
      return lastRss;
    },
    get lastLive() {
      return lastLive;
    },
    get lastEstimate() {
      return lastEstimate;
    },
    ceilingBytes,
    sample,
    dispose() {
      timer?.cancel();
      timer = undefined;
      shedding = false;
    },
  };
}
