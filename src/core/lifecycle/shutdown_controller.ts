import type { Clock } from "../clock.ts";
import { systemClock } from "../clock.ts";
import { consoleLogger, type Host, type Logger } from "../host/host.ts";
import { type _KeyList, _options, _show } from "../_validate.ts";
import { _safeLogger } from "../_user_code.ts";

/** The first stop: what fired it and when. */
export interface StopInfo {
  /** "SIGTERM", "SIGINT", or the reason given to `shutdown()`. */
  readonly reason: string;
  /** `clock.now()` at the moment it fired. */
  readonly at: number;
}

/** A background task to join: a promise, or a function started at once with the controller's signal. */
export type BackgroundTask = Promise<unknown> | ((signal: AbortSignal) => Promise<unknown>);

/** Options of {@linkcode createShutdownController}. */
export interface ShutdownControllerOptions {
  /** Where OS stop signals come from in `signals` mode; its clock and log are the defaults. */
  host?: Host | undefined;
  /**
   * `manual`: only `shutdown()` stops (an embedding host owns the signals). `signals`:
   * SIGTERM and Ctrl-C through `host.onShutdownSignal` stop too.
   * @default "signals" when a host is given, else "manual"
   */
  mode?: "manual" | "signals" | undefined;
  /** @default host.clock, else systemClock */
  clock?: Clock | undefined;
  /** @default host.log, else consoleLogger */
  log?: Logger | undefined;
}

/** One per process: the stop signal every cooperating part subscribes to. */
export interface ShutdownController {
  /** Aborted on the first stop. A plain AbortSignal: the draining gate reads `aborted` per request. */
  readonly signal: AbortSignal;
  /** Settles on the first stop; never rejects. */
  readonly stopped: Promise<StopInfo>;
  /** `clock.now()` of the first stop, undefined until then. A second stop never changes it. */
  readonly firedAt: number | undefined;
  /** The clock `firedAt` is read on; the drain measures its window on the same one. */
  readonly clock: Clock;
  /** Where the controller (and, by default, the drain) logs. */
  readonly log: Logger;
  /** Stops (first call only); a later call or signal is logged and ignored. */
  shutdown(reason?: string): void;
  /**
   * Registers a background task (a function is started at once with `signal`); the drain
   * joins it with what is left of the window. The returned promise never rejects: it
   * settles with the task's value, or undefined when the task failed (which is logged).
   */
  join(task: BackgroundTask): Promise<unknown>;
  /** Joined tasks not yet settled. */
  readonly pendingJoins: number;
  /** Settles the next time no joined task is pending (at once if none is). */
  joined(): Promise<void>;
  /** Uninstalls the signal handlers. Until then a second signal is caught (and ignored). */
  dispose(): void;
}

const WHAT = "create shutdown controller";

/** Every option of {@linkcode ShutdownControllerOptions}: any other key is refused (_validate.ts `_onlyKnown`). */
const SHUTDOWN_CONTROLLER_KEYS: _KeyList<ShutdownControllerOptions> = { host: true, mode: true, clock: true, log: true };

/**
 * Creates the process's shutdown controller, either `manual` or listening to the Host's
 * SIGTERM and Ctrl-C. The first stop aborts `signal`, settles `stopped` and sets
 * `firedAt`; a second one is logged and changes nothing, so it neither kills the process
 * nor shortens the drain. A signal whose install fails is logged and never fires; a Host
 * whose `onShutdownSignal` throws outright is logged too, and the process then runs
 * until killed (or until `shutdown()` is called).
 *
 * @example Manual mode, with a background task that stops on the signal
 * ```ts
 * import { createShutdownController } from "serve-hygiene";
 * const controller = createShutdownController({ mode: "manual" });
 * controller.join((signal) => new Promise((resolve) => signal.addEventListener("abort", resolve)));
 * controller.shutdown("deploy");
 * const info = await controller.stopped;
 * await controller.joined();
 * console.assert(info.reason === "deploy" && controller.signal.aborted && controller.pendingJoins === 0);
 * ```
 */
export function createShutdownController(options?: ShutdownControllerOptions): ShutdownController {
  const o = _options(WHAT, options, SHUTDOWN_CONTROLLER_KEYS);
  const mode = o.mode ?? (o.host === undefined ? "manual" : "signals");
  if (mode !== "manual" && mode !== "signals") {
    throw new RangeError(`Cannot ${WHAT} as "mode" must be "manual" or "signals": current value is ${_show(mode)}`);
  }
  if (mode === "signals" && o.host === undefined) {
    throw new TypeError(`Cannot ${WHAT} as "host" must be given in "signals" mode: current value is undefined`);
  }
  const clock = o.clock ?? o.host?.clock ?? systemClock;
  const log = _safeLogger(o.log ?? o.host?.log ?? consoleLogger);

  const abort = new AbortController();
  let resolveStopped!: (info: StopInfo) => void;
  const stopped = new Promise<StopInfo>((resolve) => (resolveStopped = resolve));
  let first: StopInfo | undefined;
  let pending = 0;
  const idleWaiters: (() => void)[] = [];

  const shutdown = (reason = "shutdown") => {
    if (first !== undefined) {
      log({ level: "warn", msg: "shutdown already in progress; ignored", reason, firstReason: first.reason });
      return;
    }
    first = Object.freeze({ reason, at: clock.now() });
    log({ level: "info", msg: "shutdown", reason });
    abort.abort(new DOMException(`Shutting down: ${reason}`, "AbortError"));
    resolveStopped(first);
  };

  let uninstall: () => void = () => {};
  if (mode === "signals") {
    try {
      uninstall = o.host!.onShutdownSignal((signal) => shutdown(signal));
    } catch (error) {
      // The Host promised never to throw; if it does, the process runs until killed.
      log({ level: "error", msg: "signal handler install failed", error });
    }
  }

  const settleOne = () => {
    pending--;
    if (pending === 0) idleWaiters.splice(0).forEach((resolve) => resolve());
  };

  return {
    signal: abort.signal,
    stopped,
    get firedAt() {
      return first?.at;
    },
    clock,
    log,
    shutdown,
    join(task) {
      let running: Promise<unknown>;
      try {
        running = Promise.resolve(typeof task === "function" ? task(abort.signal) : task);
      } catch (error) {
        running = Promise.reject(error);
      }
      pending++;
      return running.then(
        (value) => (settleOne(), value),
        (error) => {
          settleOne();
          log({ level: "error", msg: "background task failed", error });
          return undefined;
        },
      );
    },
    get pendingJoins() {
      return pending;
    },
    joined() {
      return pending === 0 ? Promise.resolve() : new Promise((resolve) => idleWaiters.push(resolve));
    },
    dispose() {
      const done = uninstall;
      uninstall = () => {};
      done();
    },
  };
}
