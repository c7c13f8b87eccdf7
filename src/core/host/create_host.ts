// The one Host implementation. A runtime's adapter only hands over its primitives (how it
// reads memory, installs a signal listener, ends the process, unrefs a timer); what a Host
// promises on top of them — signal installs that log and never fire on failure, unref'd
// sampler timers, readings absent where the runtime has none — is kept here, once.
import { createSystemClock } from "../clock.ts";
import { consoleLogger, type Host, type Logger } from "./host.ts";
import { installShutdownSignals, type SignalApi } from "./signals.ts";
import { _object, _optionalBoolean, _optionalFunction, type _KeyList, _options, _show } from "../_validate.ts";
import { _safeLogger } from "../_user_code.ts";

/** Options of {@linkcode createHost}: the runtime's primitives. Each one left out is a capability the Host lacks. */
export interface HostOptions {
  /** Resident set size in bytes. @default none: the Host's `rss()` reads undefined */
  rss?: (() => number | undefined) | undefined;
  /** Live memory in bytes (heap used + external on V8). @default none: the memory ceiling decides on RSS alone */
  liveBytes?: (() => number | undefined) | undefined;
  /** Runs a full garbage collection. @default none */
  collectGarbage?: (() => void) | undefined;
  /** CPU time the process has used, in ms (user + system). @default none: see Host.cpuMs */
  cpuMs?: (() => number | undefined) | undefined;
  /** The CPU quota, in cores (a cgroup's). @default none: a whole core */
  cpuCores?: (() => number | undefined) | undefined;
  /** Adds and removes one stop-signal listener (may throw: logged, never fatal). @default none: no signal is ever installed */
  signals?: SignalApi | undefined;
  /** Ends the process with a code. @default none */
  exit?: ((code: number) => void) | undefined;
  /** Sets the code the process ends with when it ends on its own. @default none */
  setExitCode?: ((code: number) => void) | undefined;
  /**
   * The process's IPC channel, when it has one (a node:cluster worker, a forked child): held
   * while any server runs, let go once the last has drained. @default none
   */
  ipcChannel?: (() => { ref?(): void; unref?(): void } | null | undefined) | undefined;
  /**
   * Makes a global timer id stop keeping the process alive (for timers scheduled with
   * `{ unref: true }`). @default the id's own `unref()` where it has one
   */
  unref?: ((id: unknown) => void) | undefined;
  /**
   * Runs a callback in the next event-loop turn, after the I/O pending now, with its cancel
   * (Node's and Bun's `setImmediate`/`clearImmediate`; both or neither). With it, a request
   * past the load monitor's batch bound waits for a later turn instead of being refused;
   * without it, its 503 is held 100 ms (at most `shedWaitMs`) and the request never runs.
   * Leave it out where the runtime's immediates run before pending I/O is polled (Deno).
   * @default none
   */
  setImmediate?: ((fn: () => void) => unknown) | undefined;
  clearImmediate?: ((id: never) => void) | undefined;
  /** Where install failures (and the core's few other lines) are logged. @default consoleLogger */
  log?: Logger | undefined;
  /** The runtime's Response is native and cheap to clone: refusals are clones of prebuilt answers. @default false */
  cloneResponses?: boolean | undefined;
}

const WHAT = "create host";
/** Servers started through Hosts with an IPC channel and not yet drained (one count for the whole program). */
let _serving = 0;
const FUNCTIONS = ["rss", "liveBytes", "collectGarbage", "cpuMs", "cpuCores", "exit", "setExitCode", "ipcChannel", "unref", "setImmediate", "clearImmediate", "log"] as const;

function _signals(value: SignalApi | undefined): SignalApi | undefined {
  if (value === undefined) return undefined;
  _object(WHAT, "signals", value);
  for (const field of ["add", "remove"] as const) {
    if (typeof value[field] !== "function") {
      throw new TypeError(`Cannot ${WHAT} as "signals.${field}" must be a function: current value is ${_show(value[field])}`);
    }
  }
  return value;
}

// A primitive that throws is logged once and stood in for (a review: a throwing `unref` left
// the timer it was given uncancellable, every request failed, and the deadline wheel's
// intervals multiplied; a throwing `setImmediate` failed every request that waited a turn).
function _once(log: Logger, msg: string): (error: unknown) => void {
  let logged = false;
  return (error) => {
    if (logged) return;
    logged = true;
    log({ level: "error", msg, error });
  };
}

/** The Host's `unref`, a throw logged once (the timer then keeps the process alive). */
function _unrefOrLog(unref: (id: unknown) => void, log: Logger): (id: unknown) => void {
  const failed = _once(log, "timer unref failed");
  return (id) => {
    try {
      unref(id);
    } catch (error) {
      failed(error);
    }
  };
}

/** A macrotask the Host's `setImmediate` would not schedule (it threw). */
class _Instead {
  constructor(readonly timer: ReturnType<typeof setTimeout>) {}
}

/** The Host's `setImmediate`, a 0 ms timer standing in where it throws (logged once). */
function _immediateOrTimer(set: (fn: () => void) => unknown, clear: (id: never) => void, log: Logger): { set(fn: () => void): unknown; clear(id: never): void } {
  const failed = _once(log, "setImmediate failed; a 0 ms timer stands in");
  const cleared = _once(log, "clearImmediate failed");
  return {
    set(fn) {
      try {
        return set(fn);
      } catch (error) {
        failed(error);
        return new _Instead(setTimeout(fn, 0));
      }
    },
    clear(id) {
      if ((id as unknown) instanceof _Instead) return clearTimeout((id as unknown as _Instead).timer);
      try {
        clear(id);
      } catch (error) {
        cleared(error);
      }
    },
  };
}

/** Every option of {@linkcode HostOptions}: any other key is refused (_validate.ts `_onlyKnown`). */
const HOST_KEYS: _KeyList<HostOptions> = { rss: true, liveBytes: true, collectGarbage: true, cpuMs: true, cpuCores: true, signals: true, exit: true, setExitCode: true, ipcChannel: true, unref: true, setImmediate: true, clearImmediate: true, log: true, cloneResponses: true };

/**
 * A Host over a runtime's primitives: what every adapter's `createXxxHost()` is built on, and
 * what an embedder with its own runtime (or a test) can build directly. Readings the runtime
 * lacks are absent from the Host; without `signals`, `onShutdownSignal` installs nothing.
 * SIGTERM and SIGINT are installed through `signals`; one whose install throws is logged and
 * never fires a shutdown.
 *
 * @example A Host over hand-made primitives
 * ```ts
 * import { createHost, type ShutdownSignal } from "serve-hygiene";
 * const listeners = new Map<string, () => void>();
 * const host = createHost({
 *   rss: () => 64 * 1024 * 1024,
 *   signals: {
 *     add: (signal, handler) => void listeners.set(signal, handler),
 *     remove: (signal) => void listeners.delete(signal),
 *   },
 * });
 * const got: ShutdownSignal[] = [];
 * const uninstall = host.onShutdownSignal((signal) => got.push(signal));
 * listeners.get("SIGTERM")!();
 * uninstall();
 * console.assert(got[0] === "SIGTERM" && listeners.size === 0 && host.rss() === 64 * 1024 * 1024);
 * ```
 */
export function createHost(options?: HostOptions): Host {
  const o = _options(WHAT, options, HOST_KEYS);
  for (const field of FUNCTIONS) _optionalFunction(WHAT, field, o[field]);
  const signals = _signals(o.signals);
  if ((o.setImmediate === undefined) !== (o.clearImmediate === undefined)) {
    throw new TypeError(`Cannot ${WHAT} as "setImmediate" and "clearImmediate" go together: only one was given`);
  }
  const log = _safeLogger(o.log ?? consoleLogger);
  const rss = o.rss;
  const host: { -readonly [K in keyof Host]: Host[K] } = {
    clock: createSystemClock({
      ...(o.unref === undefined ? {} : { unref: _unrefOrLog(o.unref, log) }),
      ...(o.setImmediate === undefined ? {} : { immediate: _immediateOrTimer(o.setImmediate, o.clearImmediate!, log) }),
    }),
    log,
    rss: rss === undefined ? () => undefined : () => rss(),
    onShutdownSignal: signals === undefined ? () => () => {} : (listener) => installShutdownSignals(signals, listener, log),
  };
  if (o.liveBytes !== undefined) host.liveBytes = o.liveBytes;
  if (o.collectGarbage !== undefined) host.collectGarbage = o.collectGarbage;
  if (o.cpuMs !== undefined) host.cpuMs = o.cpuMs;
  if (o.cpuCores !== undefined) host.cpuCores = o.cpuCores;
  if (o.exit !== undefined) host.exit = o.exit;
  if (o.setExitCode !== undefined) host.setExitCode = o.setExitCode;
  const read = o.ipcChannel;
  if (read !== undefined) {
    // A reading that throws is no channel: Deno's IPC channel getter throws inside a Worker, and
    // every serve() there rejected with its TypeError (a review).
    const channel = () => {
      try {
        return read();
      } catch {
        return undefined;
      }
    };
    // One count for the process, whatever the number of Hosts: a worker serving twice, or two
    // servers at once, keeps its channel until the last drain (a review: a worker's second
    // serve() died waiting on its primary with the channel let go at the first drain).
    host.attach = () => {
      if (_serving++ === 0) channel()?.ref?.();
    };
    host.detach = () => {
      if (_serving > 0 && --_serving === 0) channel()?.unref?.();
    };
  }
  if (_optionalBoolean(WHAT, "cloneResponses", o.cloneResponses) === true) host.cloneResponses = true;
  return host;
}
