import type { Clock } from "../clock.ts";
import type { Logger } from "../host/host.ts";
import type { Server } from "../host/server.ts";
import type { ShutdownController, StopInfo } from "./shutdown_controller.ts";
import type { DrainOutcome } from "./drain_outcome.ts";
import { ServeError } from "./serve_error.ts";
import { _durationMs, _options, _show, _given } from "../_validate.ts";
import { _safeLogger } from "../_user_code.ts";
import { _answering } from "../errors.ts";

// Re-exported: callers of runUntilDrained name its result from here.
export type { DrainOutcome } from "./drain_outcome.ts";

/** The request work a drain waits on; the request guard supplies it (a concurrency limit fits). */
export interface InFlightWork {
  /** Handlers still running (permits held). */
  readonly inFlight: number;
  /** Long-lived answers (SSE, long polls the guard tracks) still streaming after their handlers settled. */
  readonly streaming?: number;
  /** Settles the next time nothing is in flight. */
  idle(): Promise<void>;
  /** Forced drain: fires every in-flight request's AbortSignal and its abandon cleanups. */
  abortAll?(reason: unknown): void;
}

// The reasons forced drains aborted in-flight work with: a runtime that reports the streams
// they cut as errors (Deno's onError) tells them from a handler's failure by these.
const _drainAborts = new WeakSet<object>();

/** Whether `error` is the reason a forced drain aborted in-flight work with (not a failure to log). */
export function _isDrainAbort(error: unknown): boolean {
  return typeof error === "object" && error !== null && _drainAborts.has(error);
}

/** Options of {@linkcode runUntilDrained}. */
export interface DrainOptions {
  /**
   * The drain window in milliseconds, counted from the stop signal. It bounds the pre-stop
   * delay, the in-flight drain and the joins together — never the serving before the signal.
   * @default 25000
   */
  drainTimeoutMs?: number | undefined;
  /** Runs last, on both outcomes, outside the window; a failure becomes a `flush` {@linkcode ServeError}. */
  onDrained?: (() => unknown) | undefined;
  /**
   * How long `onDrained` may take: past it the drain gives up on it with a `flush`
   * {@linkcode ServeError} (the outcome reported, exit code 4) instead of waiting for the
   * platform's kill. `serve` passes its `flushMarginMs`. @default Infinity
   */
  flushTimeoutMs?: number | undefined;
  /**
   * After the signal, keep serving (readiness already failing) this long before stopping
   * accepting, so load balancers notice. Counts inside the window; must be below it.
   * @default 0
   */
  preStopDelayMs?: number | undefined;
  /** In-flight request work to wait for; without it only `stopAccepting()` is waited for. */
  work?: InFlightWork | undefined;
  /**
   * Called once the pre-stop delay is over, just before `stopAccepting()`: the moment the
   * request guard should start refusing new requests (during the delay they are served).
   */
  beforeStopAccepting?: (() => void) | undefined;
  /** Must be the controller's clock (firedAt is read on it). @default controller.clock */
  clock?: Clock | undefined;
  /** @default controller.log */
  log?: Logger | undefined;
}

interface _Config {
  drainTimeoutMs: number;
  preStopDelayMs: number;
  onDrained: (() => unknown) | undefined;
  flushTimeoutMs: number;
  work: InFlightWork | undefined;
  beforeStopAccepting: (() => void) | undefined;
  clock: Clock;
  log: Logger;
}

const WHAT = "run until drained";

/**
 * Serves until the server ends on its own (clean) or fails (an `io` {@linkcode ServeError}),
 * or until the controller's first stop. Then, inside one window of `drainTimeoutMs` counted
 * from the signal: wait the pre-stop delay, stop accepting, and wait for both the listener
 * to close and the in-flight work to go idle. Past the window: `abortAll` and `closeAll`,
 * outcome `forced`. Joined background tasks get what is left of the same window. Then
 * `onDrained` runs, on both outcomes. `stopAccepting()` is never awaited beyond the window
 * (on some runtimes it cannot settle while a request is stuck, and cannot be forced).
 * Bad options throw at once, before anything is awaited.
 *
 * @example A manual stop with nothing in flight drains clean
 * ```ts
 * import { createShutdownController, runUntilDrained, type Server } from "serve-hygiene";
 * const server: Server = {
 *   address: { hostname: "127.0.0.1", port: 0 },
 *   stopAccepting: () => Promise.resolve(),
 *   closeAll: () => {},
 *   closed: new Promise(() => {}),
 * };
 * const controller = createShutdownController({ mode: "manual" });
 * const done = runUntilDrained(server, controller, { drainTimeoutMs: 1000 });
 * controller.shutdown("deploy");
 * const result = await done;
 * console.assert(result.outcome === "clean" && result.reason === "deploy");
 * ```
 */
export function runUntilDrained(
  server: Server,
  controller: ShutdownController,
  options?: DrainOptions,
): Promise<DrainOutcome> {
  const o = _options(WHAT, options);
  const drainTimeoutMs = _durationMs(WHAT, "drainTimeoutMs", _given(o.drainTimeoutMs, 25_000), { infinity: true });
  const preStopDelayMs = _durationMs(WHAT, "preStopDelayMs", _given(o.preStopDelayMs, 0), { zero: true });
  if (preStopDelayMs >= drainTimeoutMs) {
    throw new RangeError(
      `Cannot ${WHAT} as "preStopDelayMs" must be below "drainTimeoutMs": current values are ${preStopDelayMs} and ${drainTimeoutMs}`,
    );
  }
  if (o.onDrained !== undefined && typeof o.onDrained !== "function") {
    throw new TypeError(`Cannot ${WHAT} as "onDrained" must be a function: current value is ${_show(o.onDrained)}`);
  }
  const flushTimeoutMs = _durationMs(WHAT, "flushTimeoutMs", _given(o.flushTimeoutMs, Infinity), { infinity: true });
  const config: _Config = {
    drainTimeoutMs,
    preStopDelayMs,
    onDrained: o.onDrained,
    flushTimeoutMs,
    work: o.work,
    beforeStopAccepting: o.beforeStopAccepting,
    clock: o.clock ?? controller.clock,
    log: _safeLogger(o.log ?? controller.log),
  };
  return _run(server, controller, config);
}

/** How long a failed listener's last answers are given to go out before the failure is reported. */
const _FLUSH_AFTER_FAILURE_MS = 100;

async function _run(server: Server, controller: ShutdownController, config: _Config): Promise<DrainOutcome> {
  const serving: _Serving = { accepting: true, failed: undefined };
  const ended = await _serve(server, controller, config.log, serving);
  if (ended.kind === "failed") {
    // The listener failed (Deno's ends at the first accept out of descriptors): the requests
    // already admitted still get their answers, within the drain window, before the failure
    // is reported (and serve()'s process exits on it).
    const work = config.work;
    if (work !== undefined && work.inFlight > 0) {
      config.log({ level: "error", msg: "server failed; answering the requests in flight first", inFlight: work.inFlight, error: ended.error });
      const deadline = config.clock.now() + config.drainTimeoutMs;
      await _within(config.clock, deadline, _orNever(() => work.idle(), config.log, "in-flight idle failed")).catch(() => {});
      // Their answers are being written: nothing else keeps a process whose listener is gone
      // alive meanwhile (Deno ended before the last one went out).
      await _within(config.clock, Math.min(deadline, config.clock.now() + _FLUSH_AFTER_FAILURE_MS), new Promise(() => {}));
    }
    throw new ServeError("io", ended.error);
  }
  const outcome = ended.kind === "closed"
    ? Object.freeze({ outcome: "clean", stillRunning: 0, drainedAt: config.clock.now(), joinsPending: controller.pendingJoins } as const)
    : await _drain(server, controller, ended.info, config, serving);
  const flush = config.onDrained;
  if (flush !== undefined) {
    let inTime: boolean;
    try {
      inTime = await _within(config.clock, config.clock.now() + config.flushTimeoutMs, Promise.resolve().then(flush));
    } catch (error) {
      throw new ServeError("flush", error, outcome);
    }
    if (!inTime) throw new ServeError("flush", new DOMException(`The flush hook did not finish within ${config.flushTimeoutMs} ms`, "TimeoutError"), outcome);
  }
  // The server failed while it was still to serve (the pre-stop delay): not a clean stop, however
  // the requests drained (a review: Deno's listener gone mid-delay read as "clean", exit 0).
  if (serving.failed !== undefined) throw new ServeError("io", serving.failed.error, outcome);
  return outcome;
}

type _Ended = { kind: "signal"; info: StopInfo } | { kind: "closed" } | { kind: "failed"; error: unknown };

/** Whether the server is still to accept (until the drain stops it), and how it failed meanwhile. */
type _Serving = { accepting: boolean; failed: { error: unknown } | undefined };

/** Phase 1: no timer runs here, so a healthy server serves as long as it likes. */
function _serve(server: Server, controller: ShutdownController, log: Logger, serving: _Serving): Promise<_Ended> {
  return new Promise((resolve) => {
    let settled = false;
    const end = (ended: _Ended) => {
      settled = true;
      resolve(ended);
    };
    // Registered first: when both have already happened, the stop wins.
    void controller.stopped.then((info) => settled || end({ kind: "signal", info }));
    server.closed.then(
      () => settled || end({ kind: "closed" }),
      (error) => {
        if (!settled) return end({ kind: "failed", error });
        log({ level: "error", msg: "server failed while draining", error });
        if (serving.accepting) serving.failed ??= { error };
      },
    );
  });
}

/** Phase 2: everything after the signal shares one window, counted from the signal. */
async function _drain(server: Server, controller: ShutdownController, info: StopInfo, config: _Config, serving: _Serving): Promise<DrainOutcome> {
  const { clock, log, work, drainTimeoutMs, preStopDelayMs } = config;
  const deadline = info.at + drainTimeoutMs;
  log({ level: "info", msg: "draining", reason: info.reason, drainTimeoutMs, preStopDelayMs });
  if (preStopDelayMs > 0) await _within(clock, info.at + preStopDelayMs, new Promise(() => {}));

  serving.accepting = false;
  const stopping = _settled(() => {
    config.beforeStopAccepting?.();
    return server.stopAccepting();
  }, log, "stop accepting failed");
  // A broken idle() cannot prove the work finished: wait out the window instead.
  const idle = work === undefined ? Promise.resolve() : _orNever(() => work.idle(), log, "in-flight idle failed");
  const inTime = await _within(clock, deadline, Promise.all([stopping, idle]));

  let stillRunning = 0;
  if (!inTime) {
    // A stream still open is what held the drain as often as a handler (an SSE that ignored the stop).
    stillRunning = (work?.inFlight ?? 0) + (work?.streaming ?? 0);
    log({ level: "warn", msg: "drain window ran out; force-closing", drainTimeoutMs, stillRunning });
    const reason = _answering(new DOMException(`Drain window of ${drainTimeoutMs} ms ran out`, "AbortError"), 503);
    _drainAborts.add(reason);
    try {
      work?.abortAll?.(reason);
    } catch (error) {
      log({ level: "error", msg: "abort in-flight work failed", error });
    }
    // Not awaited: the window is spent, and the flush hook must still get its turn.
    void _settled(() => server.closeAll(), log, "force close failed");
  }
  const drainedAt = clock.now();

  if (controller.pendingJoins > 0) await _within(clock, deadline, controller.joined());
  // Requests drained clean, but background work joined to the stop did not finish: the outcome
  // stays the requests' (clean or forced), and this says what an exit now would lose.
  if (controller.pendingJoins > 0) {
    log({ level: "warn", msg: "drain window ran out with joined background tasks pending", joinsPending: controller.pendingJoins, drainTimeoutMs });
  }
  return Object.freeze({
    outcome: inTime ? "clean" : "forced",
    stillRunning,
    reason: info.reason,
    signalledAt: info.at,
    drainedAt,
    joinsPending: controller.pendingJoins,
  });
}

/** True when `work` fulfils before `deadline` on `clock`, false at the deadline (or at once if past); rejects as it does. */
function _within(clock: Clock, deadline: number, work: Promise<unknown>): Promise<boolean> {
  // An infinite window (drainTimeoutMs: Infinity) waits as long as the work takes.
  if (deadline === Infinity) return work.then(() => true);
  const remaining = deadline - clock.now();
  if (remaining <= 0) return Promise.resolve(false);
  return new Promise((resolve, reject) => {
    // Not unref'd: the drain must keep the process alive until it has an outcome.
    const timer = clock.setTimeout(() => resolve(false), remaining);
    work.then(
      () => {
        timer.cancel();
        resolve(true);
      },
      (error: unknown) => {
        timer.cancel();
        reject(error);
      },
    );
  });
}

/** Calls `fn`; resolves once it settles either way, logging a throw or rejection. */
function _settled(fn: () => unknown, log: Logger, msg: string): Promise<void> {
  return new Promise<unknown>((resolve) => resolve(fn())).then(
    () => {},
    (error) => log({ level: "error", msg, error }),
  );
}

/** Calls `fn`; resolves when it resolves, never when it throws or rejects (logged). */
function _orNever(fn: () => Promise<void>, log: Logger, msg: string): Promise<void> {
  return new Promise<void>((resolve) => resolve(fn())).catch((error) => {
    log({ level: "error", msg, error });
    return new Promise<void>(() => {});
  });
}
