import type { Clock, TimerHandle } from "./clock.ts";
import { systemClock } from "./clock.ts";
import type { EventSink } from "./events.ts";
import { _emit } from "./_emit.ts";
import { _durationMs, _options, _positiveInt, _given } from "./_validate.ts";

/** Options of {@linkcode createMemoryCeiling}. */
export interface MemoryCeilingOptions {
  /** Shed new requests while resident set size is above this many bytes. */
  ceilingBytes: number;
  /** Reads RSS in bytes; undefined (serverless, no reader) turns the ceiling off. */
  rss: (() => number | undefined) | undefined;
  /**
   * How often RSS is read. A read costs 10–18 µs, so it happens on a timer, never per
   * request; the timer never keeps the process alive.
   * @default 30000
   */
  intervalMs?: number;
  /** Shedding clears once RSS falls to this or below. @default ceilingBytes */
  resumeBelowBytes?: number;
  /** @default systemClock */
  clock?: Clock;
  /** Told when a read throws (the ceiling then fails open). */
  onEvent?: EventSink;
}

/** Gate 2: one boolean, set by a sampler, read per request. */
export interface MemoryCeiling {
  /** True while RSS is above the ceiling. Fails open: false when off, disposed or unreadable. */
  readonly shedding: boolean;
  /** The last RSS read, in bytes. */
  readonly lastRss: number | undefined;
  readonly ceilingBytes: number;
  /** Reads RSS now and updates the flag (the timer calls this). */
  sample(): void;
  /** Stops the sampler at once; the ceiling reads "not shedding" from then on. */
  dispose(): void;
}

/**
 * The memory ceiling. Off (never shedding, no timer) when no RSS reader is given.
 *
 * @example
 * ```ts
 * import { createManualClock, createMemoryCeiling } from "serve-hygiene";
 * let rss = 100;
 * const clock = createManualClock();
 * const ceiling = createMemoryCeiling({ ceilingBytes: 150, rss: () => rss, intervalMs: 1000, clock });
 * rss = 200;
 * clock.advance(1000);
 * console.assert(ceiling.shedding);
 * ceiling.dispose();
 * ```
 */
export function createMemoryCeiling(options: MemoryCeilingOptions): MemoryCeiling {
  const what = "create memory ceiling";
  const o = _options(what, options);
  const ceilingBytes = _positiveInt(what, "ceilingBytes", o.ceilingBytes);
  const intervalMs = _durationMs(what, "intervalMs", _given(o.intervalMs, 30_000));
  const resumeBelow = _positiveInt(what, "resumeBelowBytes", _given(o.resumeBelowBytes, ceilingBytes));
  if (resumeBelow > ceilingBytes) {
    throw new RangeError(
      `Cannot ${what} as "resumeBelowBytes" must not exceed "ceilingBytes": current values are ${resumeBelow} and ${ceilingBytes}`,
    );
  }
  const read = o.rss;
  const clock = o.clock ?? systemClock;
  let shedding = false;
  let lastRss: number | undefined;
  let timer: TimerHandle | undefined;

  const sample = () => {
    if (read === undefined || timer === undefined) return;
    let rss: number | undefined;
    try {
      rss = read();
    } catch (error) {
      _emit([o.onEvent], { type: "fault", source: "memory-ceiling", error, failed: "open" });
      rss = undefined;
    }
    lastRss = rss;
    if (rss === undefined || !Number.isFinite(rss)) shedding = false;
    else if (rss > ceilingBytes) shedding = true;
    else if (rss <= resumeBelow) shedding = false;
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
    ceilingBytes,
    sample,
    dispose() {
      timer?.cancel();
      timer = undefined;
      shedding = false;
    },
  };
}
