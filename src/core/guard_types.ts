// The guard's public types: its options, the handler it wraps, and what it returns.
// createGuard (guard.ts) composes the request path; these are what callers see of it.
import type { Clock } from "./clock.ts";
import type { ConcurrencyLimit } from "./overload/concurrency_limit.ts";
import type { ResolvedConfig, ServeHygieneConfig } from "./config.ts";
import type { DenyEvent, EventSink } from "./events.ts";
import type { ExemptOption } from "./request/exempt.ts";
import type { RefusalHeaders } from "./request/refusal_headers.ts";
import type { Logger } from "./host/host.ts";
import type { InFlightLimiter } from "./limits/inflight_limit.ts";
import type { KeyedGatesOptions } from "./limits/keyed_gates.ts";
import type { LoadMonitor, LoadMonitorOptions } from "./overload/load_monitor.ts";
import type { MemoryCeiling } from "./overload/memory_ceiling.ts";
import type { GuardedInfo, ServeInfo } from "./request/request_context.ts";

export type { ServeInfo };
/** Options of {@linkcode createGuard}: the service config plus the gates' own settings. */
export interface GuardOptions extends ServeHygieneConfig, KeyedGatesOptions {
  /**
   * Gate 7: how long a request may wait in the admission queue for a permit before 503
   * (reason "queue-timeout"): the bound on its sojourn. 0: no queue, refused at once ("shed").
   * @default 500
   */
  shedWaitMs?: number | undefined;
  /** Gate 7: the most requests that may wait; past it 503 at once ("queue-full"). @default 1024 */
  maxWaiting?: number | undefined;
  /** Gate 7: a queue that has not drained for this long serves newest first (adaptive LIFO), and so does one that cannot drain within it (or within `standingWaitMs`, if shorter) at the adaptive limit's no-queue latency. @default 100 */
  lifoAfterMs?: number | undefined;
  /**
   * Gate 7: once the queue stands, a free permit does not go to a waiter that has waited
   * longer than this; the permit stays free for the next request and the waiter is held,
   * refused ("queue-timeout") at `shedWaitMs` while requests keep finding the limit full, at
   * once when none has for `lifoAfterMs`. A wait counts from when permits last started coming
   * back after a gap longer than this and `lifoAfterMs` (waiting behind long work is not
   * queueing), and not during the adaptive limit's slow start. At most `shedWaitMs`.
   * @default min(20, shedWaitMs)
   */
  standingWaitMs?: number | undefined;
  /**
   * Gate 2: shed while memory in use is above `ceilingBytes` (RSS, capped at the Host's live
   * memory plus the start-up footprint; see `createMemoryCeiling`). Off unless set, and off
   * without a Host RSS reader. `collect` (default true): collect garbage before deciding,
   * where the Host can.
   */
  memory?: { ceilingBytes: number; intervalMs?: number | undefined; resumeBelowBytes?: number | undefined; collect?: boolean | undefined } | undefined;
  /**
   * Requests the process-wide gates (draining, memory, load, concurrency) never refuse:
   * exact paths (`["/healthz", "/readyz", "/metrics"]`) or a predicate. Checked first, without
   * parsing the URL; they still meet the keyed limits, the body cap and the timeout, and
   * hold no permit. Readiness answers 503 by itself while draining or while the memory
   * ceiling sheds.
   */
  exempt?: ExemptOption | undefined;
  /** Gate 3: the event-loop load monitor. @default on when a Host is given, off without one */
  loadMonitor?: boolean | LoadMonitorOptions | undefined;
  /** Gate 1: once this signal aborts (the shutdown controller's), new requests get 503 + `Connection: close`. */
  shutdown?: { readonly signal: AbortSignal } | undefined;
  /**
   * Once this signal aborts, every request's `context.shutdownSignal` fires (long-lived
   * responses should finish). `serve` passes its controller: it fires at the stop signal,
   * before the pre-stop delay. @default the `shutdown` option
   */
  stopping?: { readonly signal: AbortSignal } | undefined;
  /** The audit hook: every refusal, with its layer and reason. */
  onDeny?: ((event: DenyEvent) => void) | undefined;
  /**
   * Headers added to every refusal the guard answers (429, 503, 413, 408): a record, or a
   * function of the request returning one — CORS for browser clients, e.g.
   * `(r) => ({ "access-control-allow-origin": r.headers.get("origin") ?? "*", "access-control-expose-headers": "Retry-After, RateLimit" })`.
   * A refusal's own headers win; a function that throws is reported (fault `refusal-headers`)
   * and the refusal goes out without them. On Node a refusal then builds the full Request
   * (no head-path answer); the connection cap's 503 (before any request) carries none. @default none
   */
  refusalHeaders?: RefusalHeaders | undefined;
  /**
   * A handler's error (the client only ever sees a generic 500). A hook that throws is logged;
   * the answer is still the 500. @default logged
   */
  onError?: ((error: unknown, request: Request) => void) | undefined;
  /** The metrics sink: deny, request and fault events. */
  onEvent?: EventSink | undefined;
  /** @default the Host's clock, else systemClock */
  clock?: Clock | undefined;
  /** @default the Host's logger, else consoleLogger */
  log?: Logger | undefined;
}


/** A Web fetch handler running behind the guard. */
export type GuardedHandler = (request: Request, info: GuardedInfo) => Response | Promise<Response>;

/** The work the drain waits on (see `runUntilDrained`). */
export interface GuardWork {
  readonly inFlight: number;
  idle(): Promise<void>;
  /** Abandons every in-flight request: signals fire, cleanups run. */
  abortAll(reason: unknown): void;
}

/** The composed request path. */
export interface Guard {
  readonly config: ResolvedConfig;
  /**
   * Wraps a handler into a Web fetch handler `(request, info?) => Promise<Response>`. `info` is
   * a {@linkcode ServeInfo}, or what the runtime hands a fetch handler beside the request
   * (`deno serve`'s handler info, Bun's server, @hono/node-server's env): the client's address
   * is read from it, when a keyed gate or the handler asks.
   */
  wrap(handler: GuardedHandler): (request: Request, info?: ServeInfo | object) => Promise<Response>;
  /** Handlers running now (permits held), stragglers included. */
  readonly inFlight: number;
  /** Requests already answered 408 whose handlers have not settled yet. */
  readonly stragglers: number;
  /** Requests waiting at the load monitor: for a later event-loop turn (Node and Bun), or for their held refusal (a clock without `setImmediate`: Deno). */
  readonly waitingForTurn: number;
  readonly concurrency: ConcurrencyLimit;
  readonly memory: MemoryCeiling | undefined;
  readonly load: LoadMonitor | undefined;
  /** Gate 6's per-key in-flight limiter, when configured. */
  readonly inFlightPerKey: InFlightLimiter | undefined;
  readonly work: GuardWork;
  /** Stops the samplers and probes. */
  dispose(): void;
}
