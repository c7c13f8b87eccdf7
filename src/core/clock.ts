/** A scheduled callback that can be cancelled. Cancelling twice, or after it ran, is a no-op. */
export interface TimerHandle {
  cancel(): void;
}

/** Options of {@linkcode Clock.setTimeout} and {@linkcode Clock.setInterval}. */
export interface TimerOptions {
  /**
   * When true the timer does not keep the process alive (samplers, probes). Runtimes
   * without the notion ignore it.
   * @default false
   */
  unref?: boolean | undefined;
}

/**
 * The time source of every time-dependent piece of the core. Production code uses
 * {@linkcode systemClock} (or the one its Host supplies); tests use a manual clock and
 * never sleep.
 */
export interface Clock {
  /** Monotonic milliseconds from an arbitrary origin. */
  now(): number;
  /** Runs `fn` once, `ms` milliseconds from now. */
  setTimeout(fn: () => void, ms: number, options?: TimerOptions): TimerHandle;
  /** Runs `fn` every `ms` milliseconds until cancelled. */
  setInterval(fn: () => void, ms: number, options?: TimerOptions): TimerHandle;
  /**
   * Runs `fn` once in the next event-loop turn, after the I/O pending now, with no timer's
   * minimum delay (Node's timers wait at least 1 ms). Optional: a clock without it cannot resume
   * work in the next turn (the load gate then holds its refusal a while, REFUSAL_HOLD_MS, where
   * it would have made a request wait; only a `busy` one is started, by a probe that reads the
   * loop normal within the hold).
   */
  setImmediate?(fn: () => void): TimerHandle;
}

/** Options of {@linkcode createSystemClock}. */
export interface SystemClockOptions {
  /**
   * Makes a timer id returned by the global `setTimeout`/`setInterval` stop keeping the
   * process alive. The default calls `id.unref()` where the id is an object that has one
   * (Node, Bun); the Deno adapter passes its runtime's own timer unref.
   */
  unref?: ((id: unknown) => void) | undefined;
  /**
   * The runtime's way to run a callback in the next event-loop turn, after the I/O pending now
   * (Node's and Bun's `setImmediate`/`clearImmediate`). It becomes the clock's `setImmediate`;
   * without it the clock has none. Leave it out where the runtime's immediates run before
   * pending I/O is polled (Deno, measured): work resumed there would starve the server's I/O.
   */
  immediate?: ({ set: (fn: () => void) => unknown; clear: (id: never) => void }) | undefined;
}

function _unrefObject(id: unknown): void {
  const unref = (id as { unref?: unknown } | null)?.unref;
  if (typeof unref === "function") unref.call(id);
}

/**
 * A clock over the global timers and `performance.now()`.
 *
 * @example A timer that never keeps the process alive
 * ```ts
 * import { createSystemClock } from "./clock.ts";
 * const clock = createSystemClock();
 * const timer = clock.setTimeout(() => {}, 1000, { unref: true });
 * timer.cancel();
 * ```
 */
export function createSystemClock(options: SystemClockOptions = {}): Clock {
  const unref = options.unref ?? _unrefObject;
  const schedule = (
    set: (fn: () => void, ms: number) => unknown,
    clear: (id: never) => void,
    fn: () => void,
    ms: number,
    opts?: TimerOptions,
  ): TimerHandle => {
    const id = set(fn, ms);
    if (opts?.unref) unref(id);
    return { cancel: () => clear(id as never) };
  };
  const clock: Clock = {
    now: () => performance.now(),
    setTimeout: (fn, ms, opts) => schedule(globalThis.setTimeout, globalThis.clearTimeout, fn, ms, opts),
    setInterval: (fn, ms, opts) => schedule(globalThis.setInterval, globalThis.clearInterval, fn, ms, opts),
  };
  const immediate = options.immediate;
  if (immediate !== undefined) {
    clock.setImmediate = (fn) => {
      const id = immediate.set(fn);
      return { cancel: () => immediate.clear(id as never) };
    };
  }
  return clock;
}

/** The default clock of the core: global timers, `performance.now()`. */
export const systemClock: Clock = createSystemClock();
