import type { ResolvedConfig } from "./config.ts";
import { type ConnectionGate, createConnectionGate } from "./overload/connection_gate.ts";
import { type DrainOutcome, runUntilDrained } from "./lifecycle/drain.ts";
import { exitCodeFor } from "./lifecycle/exit_code.ts";
import { ServeError } from "./lifecycle/serve_error.ts";
import { _createGuard, _guardedFetch, type Guard, type GuardedHandler, type GuardOptions, type ServeInfo } from "./guard.ts";
import { consoleLogger, type Host } from "./host/host.ts";
import { validateLifecycle } from "./lifecycle/lifecycle_config.ts";
import { createHealth, type Health } from "./lifecycle/readiness.ts";
import type { Server, ServerAddress } from "./host/server.ts";
import { createShutdownController, type ShutdownController } from "./lifecycle/shutdown_controller.ts";
import { _given, type _KeyList, _onlyKnown, _optionalBoolean, _optionalFunction, _options, _show } from "./_validate.ts";
import { _GUARD_KEYS, _without } from "./_option_keys.ts";
import { _safeLogger, _settleQuietly } from "./_user_code.ts";

/** Options of an adapter's `serve(handler, options)`: where to listen, the guard, the lifecycle. */
export interface ServeOptions extends Omit<GuardOptions, "shutdown" | "stopping"> {
  /** @default 8000 */
  port?: number | undefined;
  /** @default "127.0.0.1" */
  hostname?: string | undefined;
  /**
   * The shutdown controller. Default: one listening for the Host's SIGTERM and Ctrl-C. Pass a
   * `manual` one when the embedding host owns its signals.
   */
  controller?: ShutdownController | undefined;
  /** Keep serving (readiness failing) this long after the signal before stopping accepting. @default 0 */
  preStopDelayMs?: number | undefined;
  /** A platform's fixed grace period, checked at startup against drain + flush margin. */
  platformGraceMs?: number | undefined;
  /**
   * Reserved for the flush hook inside the platform grace, and its bound: a hook still running
   * past it ends the drain with a `flush` ServeError (exit code 4), the outcome still reported.
   * 0: reserved nothing, not bounded. @default 2000
   */
  flushMarginMs?: number | undefined;
  /** Runs last after the drain, on both outcomes (flush logs, metrics). */
  onDrained?: (() => unknown) | undefined;
  /** Called once listening, with the bound address. */
  onListen?: ((address: ServerAddress) => void) | undefined;
  /**
   * End the process after the drain with the outcome's exit code (clean 0, io 1, forced 3,
   * flush 4), whatever still holds it (a straggler's own timers). Without it, a non-zero
   * code is set as the process's exit code (the Host's `setExitCode`), and the process ends
   * with it once nothing holds it any more.
   * @default false
   */
  exitOnDrained?: boolean | undefined;
}

/** Every option of {@linkcode ServeOptions}; an adapter's own come from its Listen (`optionKeys`). */
const SERVE_KEYS: _KeyList<ServeOptions> = Object.freeze({
  ..._without(_GUARD_KEYS, "shutdown", "stopping"),
  port: true,
  hostname: true,
  controller: true,
  preStopDelayMs: true,
  platformGraceMs: true,
  flushMarginMs: true,
  onDrained: true,
  onListen: true,
  exitOnDrained: true,
});

/** What `serve` returns. */
export interface ServeHandle {
  /** Where it listens (the real port when asked for port 0). */
  readonly address: ServerAddress;
  /** Settles after the drain and the flush hook: the outcome, or a ServeError (io / flush). */
  readonly finished: Promise<DrainOutcome>;
  readonly controller: ShutdownController;
  readonly guard: Guard;
  /** Readiness (fails from the signal on, and while memory sheds) and liveness. */
  readonly health: Health;
  readonly server: Server;
  /** Starts the drain as a signal would, and waits for it. */
  shutdown(reason?: string): Promise<DrainOutcome>;
}

/** What the adapter is asked to listen with. */
export interface ListenSettings {
  readonly port: number;
  readonly hostname: string;
  readonly config: ResolvedConfig;
  /** Gate 0, for adapters that see connections: report opens, requests and closes to it. */
  readonly connections: ConnectionGate;
  /** Aborted at the stop signal (before a pre-stop delay, not after it as `stopAccepting` is). */
  readonly stopping?: AbortSignal | undefined;
  /** Several processes listen on one port (given only to a binding that `takesReusePort`). */
  readonly reusePort?: boolean | undefined;
}

/**
 * An adapter's binding: start listening with the guarded fetch handler. It answers with the
 * Response itself when the answer is known synchronously (a refusal, a handler that returned
 * one), else with a promise.
 */
export type Listen = ((
  fetch: (request: Request, info?: ServeInfo) => Response | Promise<Response>,
  settings: ListenSettings,
) => Server | Promise<Server>) & {
  /** The binding passes `reusePort` to its runtime (Bun's); elsewhere serve() refuses the option. */
  readonly takesReusePort?: boolean;
  /** The binding reports connections to `settings.connections` (Node's), so `maxConnections` caps them; elsewhere a given one is logged as without effect. */
  readonly countsConnections?: boolean;
  /** The adapter's own options (Node's `headersTimeoutMs`, …), taken beside {@linkcode ServeOptions}. */
  readonly optionKeys?: readonly string[];
  /** Checks the adapter's own options against the guard's resolved config, before it listens (a throw rejects serve()). */
  readonly check?: (config: ResolvedConfig) => void;
};

/**
 * The runtime-independent half of every adapter's `serve`: validate the lifecycle, build
 * the controller and the guard, listen through `listen`, and run the two-phase drain. The
 * adapter supplies only its Host and how to listen.
 *
 * @example
 * ```ts
 * import { createManualClock, type Host, type Server } from "serve-hygiene";
 * import { serveWith } from "./serve.ts";
 * const host: Host = { clock: createManualClock(), rss: () => undefined, onShutdownSignal: () => () => {} };
 * const handle = await serveWith(host, (fetch) => ({
 *   address: { hostname: "127.0.0.1", port: 1 },
 *   stopAccepting: () => Promise.resolve(),
 *   closeAll: () => {},
 *   closed: new Promise<void>(() => {}),
 * } satisfies Server), () => new Response("ok"), { loadMonitor: false });
 * const outcome = await handle.shutdown("test");
 * console.assert(outcome.outcome === "clean");
 * ```
 */
export async function serveWith(host: Host, listen: Listen, handler: GuardedHandler, options?: ServeOptions): Promise<ServeHandle> {
  const o = _options("serve", options);
  // The runtimes' own TLS options (Bun's `tls`; Deno's and node:https's `cert`, `key`):
  // serve() listens on plain HTTP, and took them silently, serving plaintext on the port meant
  // for HTTPS (a review). Terminate TLS in front, or use hygiene() on your own HTTPS server.
  for (const field of ["tls", "cert", "key"] as const) {
    if ((o as Record<string, unknown>)[field] !== undefined) {
      throw new TypeError(`Cannot serve as "${field}" is not an option: serve() listens on plain HTTP; terminate TLS in front of it (a load balancer, a proxy), or serve HTTPS yourself with app.use(hygiene()) (README: TLS)`);
    }
  }
  // Taken by the Bun adapter (the Bun server's own option); elsewhere it was dropped silently, and a
  // second process on the port failed with EADDRINUSE (a review). Node 20 has none; Deno's
  // needs --unstable-net, without which the process exits 70, uncatchable (RUNTIMES.md).
  const reusePort = (o as Record<string, unknown>).reusePort;
  if (reusePort !== undefined && listen.takesReusePort !== true) {
    throw new TypeError(`Cannot serve as "reusePort" is not an option on this runtime (it is Bun's only): on Node run several processes with node:cluster; on Deno one process per port behind the balancer (README: Several processes on one machine)`);
  }
  _optionalBoolean("serve", "reusePort", reusePort);
  // Before anything listens: `exitOnDrained: "false"` (a string from the environment) is truthy
  // and ended the process, and a bad onListen or onDrained was found only once listening (a review).
  _optionalBoolean("serve", "exitOnDrained", o.exitOnDrained);
  _optionalFunction("serve", "onListen", o.onListen);
  _optionalFunction("serve", "onDrained", o.onDrained);
  // The Deno server's own way to stop: taken silently, the server went on answering after the abort (a review).
  if ((o as Record<string, unknown>).signal !== undefined) {
    throw new TypeError(`Cannot serve as "signal" is not an option: give a "controller" (createShutdownController({ mode: "manual" })) and call its shutdown()`);
  }
  _onlyKnown("serve", o, listen.optionKeys === undefined ? SERVE_KEYS : { ...SERVE_KEYS, ...Object.fromEntries(listen.optionKeys.map((k) => [k, true])) });
  // Checked here, not left to the runtime: node:http took a string that is no number ("abc") as
  // a Unix socket's path, and an empty hostname on Node and Bun listened on every interface (a
  // review: HOST set empty in the environment).
  const port = _given(o.port, 8000);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new RangeError(`Cannot serve as "port" must be an integer from 0 to 65535: current value is ${_show(o.port)}`);
  }
  const given = _given(o.hostname, "127.0.0.1");
  if (typeof given !== "string" || given === "" || given === "[]") {
    throw new TypeError(`Cannot serve as "hostname" must be a non-empty string ("0.0.0.0" or "::" for every interface): current value is ${_show(o.hostname)}`);
  }
  // An IPv6 address as a URL writes it ("[::1]"): the address itself. Node looked the bracketed
  // form up as a name and failed; Bun and Deno took it (a review: HOST=[::1]).
  const hostname = given.startsWith("[") && given.endsWith("]") ? given.slice(1, -1) : given;
  // A controller that has fired already would start a server that drains at once and hand
  // back a handle on a closed port (an in-process restart reusing the first one's).
  if (o.controller?.signal.aborted === true) {
    throw new TypeError(`Cannot serve as "controller" has already been shut down: give each serve() a new controller (createShutdownController())`);
  }
  const controller = o.controller ?? createShutdownController({ host });
  // The draining gate closes when accepting stops, not at the signal: during the pre-stop
  // delay new requests are still served while readiness already fails.
  const draining = new AbortController();
  let guard: Guard | undefined;
  let server: Server | undefined;
  let attached = false;
  try {
    // `stopping` fires every request's context.shutdownSignal at the signal itself.
    guard = _createGuard({ ...o, shutdown: draining, stopping: controller }, host, undefined);
    const lifecycle = validateLifecycle({
      requestTimeoutMs: guard.config.requestTimeoutMs,
      drainTimeoutMs: guard.config.drainTimeoutMs,
      preStopDelayMs: o.preStopDelayMs,
      platformGraceMs: o.platformGraceMs,
      flushMarginMs: o.flushMarginMs,
    });
    const connections = createConnectionGate({ maxConnections: guard.config.maxConnections, onDeny: o.onDeny, onEvent: o.onEvent });
    listen.check?.(guard.config);
    host.attach?.();
    attached = true;
    try {
      server = await listen(_guardedFetch(guard, handler), { port, hostname, config: guard.config, connections, stopping: controller.signal, reusePort: reusePort === true });
    } catch (error) {
      // A port in use, an address not available: the listener's failure, typed as when it fails
      // later. No exit code is set: the caller may catch it and listen elsewhere.
      throw new ServeError("io", error);
    }
    // A throw rejects serve() (below, nothing left listening); an async hook's rejection is logged.
    const log = _safeLogger(o.log ?? host.log ?? consoleLogger);
    // Given on a runtime with no connection hook, the cap was dropped silently, and an example's
    // startup line printed it as in effect (the deploy review). A warning, not a refusal: one
    // configuration runs on every runtime.
    if (o.maxConnections !== undefined && o.maxConnections !== Infinity && listen.countsConnections !== true) {
      log({ level: "warn", msg: "maxConnections has no effect on this runtime (no connection hook): front the server with a proxy's connection limit", maxConnections: o.maxConnections });
    }
    _settleQuietly(o.onListen?.(server.address) as unknown, (error) => log({ level: "error", msg: "onListen failed", error }));
    const finished = runUntilDrained(server!, controller, {
      drainTimeoutMs: guard.config.drainTimeoutMs,
      preStopDelayMs: o.preStopDelayMs,
      onDrained: o.onDrained,
      flushTimeoutMs: lifecycle.flushMarginMs > 0 ? lifecycle.flushMarginMs : Infinity,
      work: guard.work,
      beforeStopAccepting: () => draining.abort(),
    }).finally(() => {
      guard!.dispose();
      if (o.controller === undefined) controller.dispose();
    });
    // Observed here, so a failure is never an unhandled rejection (it still reaches whoever
    // awaits `finished`), and the process reports the outcome by its exit code: ended now
    // (exitOnDrained), or — without it — whenever it ends on its own.
    // The Host's primitives may throw (an embedder's): logged, and the rest still done (a
    // review: a throwing setExitCode was an unhandled rejection and kept the IPC channel).
    const attempt = (step: () => void, msg: string) => {
      try {
        step();
      } catch (error) {
        log({ level: "error", msg, error });
      }
    };
    const end = (code: number) => {
      if (code !== 0) attempt(() => host.setExitCode?.(code), "set exit code failed");
      // A node:cluster worker's IPC channel kept it alive after its drain, until the
      // supervisor's SIGKILL took the code with it (a review).
      attempt(() => host.detach?.(), "detach failed");
      // One macrotask later, so the caller's own reactions to `finished` (logging the
      // outcome) run before the process ends.
      if (o.exitOnDrained && host.exit !== undefined) host.clock.setTimeout(() => attempt(() => host.exit!(code), "exit failed"), 0);
    };
    finished.then((outcome) => end(exitCodeFor(outcome)), (error: unknown) => {
      log({ level: "error", msg: "serve failed", kind: (error as { kind?: unknown })?.kind, error });
      end(exitCodeFor(error));
    });
    return {
      address: server.address,
      finished,
      controller,
      guard,
      health: createHealth({ controller, memory: guard.memory }),
      server,
      shutdown(reason) {
        controller.shutdown(reason);
        return finished;
      },
    };
  } catch (error) {
    // Started before the failure (an onListen that threw, a bad onDrained): nothing is left listening.
    if (server !== undefined) {
      const started = server;
      void Promise.resolve().then(() => started.stopAccepting()).catch(() => {});
      void Promise.resolve().then(() => started.closeAll()).catch(() => {});
    }
    guard?.dispose();
    if (o.controller === undefined) controller.dispose();
    if (attached) host.detach?.();
    throw error;
  }
}
