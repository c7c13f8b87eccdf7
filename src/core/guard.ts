import { declaredLength, isBodyTooLargeError, limitBody } from "./body_limit.ts";
import { _capFor, _unreadCloses, _withClose, closesOnUnreadBody } from "./body_caps.ts";
import { createCleanupRegistry } from "./cleanup_registry.ts";
import { dropConnectionAfter } from "./connection_drop.ts";
import type { Clock } from "./clock.ts";
import { systemClock } from "./clock.ts";
import { type ConcurrencyLimit, createConcurrencyLimit, type Permit } from "./concurrency_limit.ts";
import { resolveConfig, type ResolvedConfig, type ServeHygieneConfig } from "./config.ts";
import { createDeadlines } from "./deadline_wheel.ts";
import type { DenyEvent, DenyLayer, EventSink } from "./events.ts";
import { _emit } from "./_emit.ts";
import { consoleLogger, type Host, type Logger } from "./host.ts";
import { createKeyedGates, type KeyedGatesOptions, type KeyedVerdict } from "./keyed_gates.ts";
import type { InFlightLimiter, Slot } from "./inflight_limit.ts";
import { createLoadMonitor, type LoadMonitor, type LoadMonitorOptions } from "./load_monitor.ts";
import { createMemoryCeiling, type MemoryCeiling } from "./memory_ceiling.ts";
import { _exemptMatcher, type ExemptOption } from "./exempt.ts";
import { _Context, type _ContextHost, type GuardedInfo } from "./request_context.ts";
import { _createLongLived } from "./_long_lived.ts";
import { denyResponse } from "./responses.ts";
import type { PeerAddress } from "./server.ts";
import { _durationMs, _given, _object, _options } from "./_validate.ts";

/** Options of {@linkcode createGuard}: the service config plus the gates' own settings. */
export interface GuardOptions extends ServeHygieneConfig, KeyedGatesOptions {
  /** Gate 6: how long a request may wait for a permit (LIFO) before 503. @default 0 */
  shedWaitMs?: number;
  /**
   * Gate 2: shed while memory in use is above `ceilingBytes` (RSS, capped at the Host's live
   * memory plus the start-up footprint; see `createMemoryCeiling`). Off unless set, and off
   * without a Host RSS reader. `collect` (default true): collect garbage before deciding,
   * where the Host can.
   */
  memory?: { ceilingBytes: number; intervalMs?: number; resumeBelowBytes?: number; collect?: boolean };
  /**
   * Requests the process-wide gates (draining, memory, load, concurrency) never refuse:
   * exact paths (`["/healthz", "/readyz", "/metrics"]`) or a predicate. Checked first, without
   * parsing the URL; they still meet the keyed limits, the body cap and the timeout, and
   * hold no permit. Readiness answers 503 by itself while draining or shedding.
   */
  exempt?: ExemptOption;
  /** Gate 3: the event-loop load monitor. @default on when a Host is given, off without one */
  loadMonitor?: boolean | LoadMonitorOptions;
  /** Gate 1: once this signal aborts (the shutdown controller's), new requests get 503 + `Connection: close`. */
  shutdown?: { readonly signal: AbortSignal };
  /**
   * Once this signal aborts, every request's `context.shutdownSignal` fires (long-lived
   * responses should finish). `serve` passes its controller: it fires at the stop signal,
   * before the pre-stop delay. @default the `shutdown` option
   */
  stopping?: { readonly signal: AbortSignal };
  /** How deadlines are timed: one shared coarse wheel, or a timer per request. @default "wheel" */
  deadlines?: "wheel" | "timers";
  /** The audit hook: every refusal, with its layer and reason. */
  onDeny?: (event: DenyEvent) => void;
  /** A handler's error (the client only ever sees a generic 500). @default logged */
  onError?: (error: unknown, request: Request) => void;
  /** The metrics sink: deny, request and fault events. */
  onEvent?: EventSink;
  /** @default the Host's clock, else systemClock */
  clock?: Clock;
  /** @default the Host's logger, else consoleLogger */
  log?: Logger;
}

/**
 * What an adapter passes along with each request. `peer` may be a getter: the guard reads
 * it only when a keyed gate or the handler asks (on Bun, finding the peer costs a call).
 */
export interface ServeInfo {
  readonly peer?: PeerAddress;
  /**
   * Whether the request head declares a body (Content-Length or Transfer-Encoding), from an
   * adapter that knows it cheaply (node). When true, a GET or HEAD has its declared length
   * checked too; otherwise a GET or HEAD is never asked for its headers (on Deno and Bun
   * that costs every GET a header read).
   */
  readonly declaresBody?: boolean;
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
  /** Wraps a handler into a Web fetch handler `(request, info?) => Promise<Response>`. */
  wrap(handler: GuardedHandler): (request: Request, info?: ServeInfo) => Promise<Response>;
  /** Handlers running now (permits held), stragglers included. */
  readonly inFlight: number;
  /** Requests already answered 408 whose handlers have not settled yet. */
  readonly stragglers: number;
  readonly concurrency: ConcurrencyLimit;
  readonly memory: MemoryCeiling | undefined;
  readonly load: LoadMonitor | undefined;
  /** Gate 5's per-key in-flight limiter, when configured. */
  readonly inFlightPerKey: InFlightLimiter | undefined;
  readonly work: GuardWork;
  /** Stops the samplers and probes. */
  dispose(): void;
}

/** An exempt request's permit: outside the concurrency limit, nothing to give back. */
const _UNCOUNTED: Permit = Object.freeze({ ok: true, release() {}, [Symbol.dispose]() {} });

const TIMEOUT = () => new DOMException("The request deadline passed", "TimeoutError");

/**
 * Composes the request path of DESIGN.md, cheapest refusal first: draining, memory ceiling,
 * load monitor, concurrency limit, framing and body cap, deadline, then the handler. A
 * permit is held until the handler's promise settles, so the in-flight count is true work.
 *
 * @example
 * ```ts
 * import { createGuard } from "serve-hygiene";
 * const guard = createGuard({ concurrencyLimit: 64, requestTimeoutMs: 5_000 });
 * const fetch = guard.wrap(() => new Response("hello"));
 * const res = await fetch(new Request("http://localhost/"));
 * console.assert(res.status === 200);
 * guard.dispose();
 * ```
 */
export function createGuard(options?: GuardOptions, host?: Host): Guard {
  const what = "create guard";
  const o = _options(what, options);
  const config = resolveConfig(o);
  const clock = o.clock ?? host?.clock ?? systemClock;
  const log = o.log ?? host?.log ?? consoleLogger;
  const sinks = [o.onEvent, o.onDeny === undefined ? undefined : (e: { type: string }) => e.type === "deny" && o.onDeny!(e as DenyEvent)];
  const reporting = o.onEvent !== undefined || o.onDeny !== undefined;
  const onError = o.onError ?? ((error: unknown) => log({ level: "error", msg: "handler failed", error }));
  const concurrency = createConcurrencyLimit({
    limit: config.concurrencyLimit,
    shedWaitMs: _durationMs(what, "shedWaitMs", _given(o.shedWaitMs, 0), { zero: true }),
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
  const loadOption = _given(o.loadMonitor, host !== undefined);
  const load = loadOption === false
    ? undefined
    : createLoadMonitor({ ...(loadOption === true ? {} : _object(what, "loadMonitor", loadOption)), clock });
  // The probe starts with the first request, so start-up work between createGuard() and
  // serving (module loading, warming caches) is not read as a stalled loop. A probe stopped
  // for lack of requests (idleAfterMs) is restarted by the next request's admit().
  let loadIdle = load !== undefined;
  const deadlines = createDeadlines(_given(o.deadlines, "wheel"), clock);
  const shutdown = o.shutdown?.signal;
  const keyed = createKeyedGates(o, (event) => _emit(sinks, event));
  const live = new Set<_Context>();
  const longLived = _createLongLived(o.stopping?.signal ?? shutdown, clock);
  let stragglers = 0;

  const deny = (layer: DenyLayer, reason: string, status: number, retryAfterMs?: number, close?: boolean) => {
    if (reporting) _emit(sinks, { type: "deny", layer, reason, status, retryAfterMs });
    return denyResponse(status, { retryAfterMs, close });
  };

  const contextHost: _ContextHost = {
    schedule: (ms, fn, now) => deadlines.schedule(ms, fn, now),
    now: () => clock.now(),
    validateTimeout: (ms) => _durationMs("set the request timeout", "timeoutMs", ms, { infinity: true }),
    onDeadline(ctx) {
      if (ctx.settled) return;
      ctx.abandon(TIMEOUT());
      // A 408 ends its connection (RFC 9110 §15.5.9); with a body that may still be arriving,
      // even where the runtime would read it to its end (Deno).
      const res = deny("timeout", "deadline", 408, undefined, true);
      if (ctx.answer(ctx.failBody === undefined ? res : dropConnectionAfter(res))) {
        ctx.straggling = true;
        stragglers++;
      }
    },
    onAbandon: (ctx, cleanup) => (ctx.cleanups ??= createCleanupRegistry(log)).add(cleanup),
    abandonCleanups: (ctx, reason) => ctx.cleanups?.abandon(reason),
    watchShutdown: (ctx) => longLived.watch(ctx),
  };

  const answerWith = (ctx: _Context, res: Response) => {
    const out = longLived.response(ctx, res, config.requestTimeoutMs);
    // Already answered (408, or a forced drain's 503): nobody will read this body.
    if (!ctx.answer(out)) out.body?.cancel().catch(() => {});
  };

  const report = (ctx: _Context, status: number, outcome: "ok" | "error") => {
    if (o.onEvent === undefined) return;
    const timedOut = ctx.straggling;
    _emit([o.onEvent], {
      type: "request",
      status: timedOut ? 408 : status,
      durationMs: clock.now() - ctx.startedAt,
      outcome: timedOut ? "timeout" : outcome,
    });
  };

  const run = (
    handler: GuardedHandler,
    request: Request,
    info: ServeInfo | undefined,
    now: number,
    permit: Permit,
    key: string | undefined,
    slot: Slot | undefined,
  ) => {
    // A GET or HEAD has no body to read here, but may declare one the runtime would ingest:
    // its length is checked too when the adapter says the head declares one. The method is
    // read first: on a lazily built request (@hono/node-server) reading body builds it.
    const method = request.method;
    const bodyless = method === "GET" || method === "HEAD";
    const body = bodyless ? null : request.body;
    const declares = body !== null || (bodyless && info?.declaresBody === true);
    const declared = declares && request.headers.has("content-length") ? declaredLength(request.headers) : undefined;
    if (declared?.kind === "malformed") {
      permit.release();
      slot?.release();
      return Promise.resolve(deny("framing", "malformed-length", 400));
    }
    // Gate 8, the declared half: the cap that applies is known before the handler runs (the
    // service cap or a declared route's), so a handler that never reads the body cannot make
    // the runtime ingest it. Past 64 KiB the connection closes instead of reading the rest.
    const cap = declared === undefined && body === null ? config.bodyLimitBytes : _capFor(request, config.bodyLimitBytes, config.routeBodyLimits);
    if (declared?.kind === "length" && cap !== undefined && declared.bytes > cap) {
      permit.release();
      slot?.release();
      body?.cancel().catch(() => {});
      return Promise.resolve(deny("body", "over-cap", 413, undefined, closesOnUnreadBody(declared)));
    }
    const ctx = new _Context(contextHost, request, info, now, config.requestTimeoutMs, cap, key);
    if (declared?.kind === "length") ctx.declaredBytes = declared.bytes;
    let req = request;
    let bodyEnded = false;
    if (body !== null) {
      const limited = limitBody(body, {
        limit: () => ctx.bodyLimitBytes,
        declared,
        onOverflow: () => (ctx.overflowed = true),
        onEnd: () => (bodyEnded = true),
        bindFail: (fail) => (ctx.failBody = fail),
      });
      req = new Request(request, { body: limited, duplex: "half" } as RequestInit);
    }
    live.add(ctx);
    return new Promise<Response>((resolve) => {
      ctx.resolve = resolve;
      // The permit is released when the handler settles — not when a 408 went out.
      const settle = () => {
        if (ctx.straggling) stragglers--;
        ctx.finish();
        live.delete(ctx);
        longLived.settled(ctx);
        permit.release();
        slot?.release();
      };
      if (config.requestTimeoutMs !== Infinity) ctx.arm(now);
      let result: Response | Promise<Response>;
      try {
        // The context is also the handler's info object: { peer, context } without another allocation.
        result = handler(req, ctx);
      } catch (error) {
        result = Promise.reject(error);
      }
      Promise.resolve(result).then(
        (res) => {
          settle();
          if (ctx.overflowed) {
            if (res instanceof Response) res.body?.cancel().catch(() => {});
            ctx.answer(deny("body", "over-cap", 413, undefined, closesOnUnreadBody(declared)));
          } else if (res instanceof Response) {
            // A body the handler left unread, over 64 KiB or of unknown length: the connection
            // closes rather than make the runtime read the rest (Bun and Deno would, unbounded).
            answerWith(ctx, !bodyEnded && _unreadCloses(request, declared, body !== null) ? _withClose(res) : res);
          } else {
            onError(new TypeError("The handler did not return a Response"), request);
            ctx.answer(denyResponse(500));
          }
          report(ctx, res instanceof Response ? res.status : 500, "ok");
        },
        (error: unknown) => {
          settle();
          if (ctx.overflowed || isBodyTooLargeError(error)) ctx.answer(deny("body", "over-cap", 413, undefined, closesOnUnreadBody(declared)));
          else {
            // After a 408 the failure is the expected reaction to the aborted signal.
            if (ctx.abandonedBy === undefined) onError(error, request);
            ctx.answer(denyResponse(500));
          }
          report(ctx, 500, "error");
        },
      );
    });
  };

  // Gate 6, then the rest; a slot reserved by gate 5 is returned on refusal.
  const admit = (handler: GuardedHandler, request: Request, info: ServeInfo | undefined, now: number, key?: string, slot?: Slot) => {
    const permit = concurrency.tryAcquire();
    if (permit.ok) return run(handler, request, info, now, permit, key, slot);
    if (concurrency.shedWaitMs === 0) {
      slot?.release();
      return Promise.resolve(deny("concurrency", "shed", 503, permit.retryAfterMs));
    }
    return concurrency.acquire(request.signal).then((p) => {
      if (p.ok) return run(handler, request, info, now, p, key, slot);
      slot?.release();
      return deny("concurrency", p.reason, 503, p.retryAfterMs);
    });
  };

  const afterKeyed = (handler: GuardedHandler, request: Request, info: ServeInfo | undefined, now: number, v: KeyedVerdict) =>
    // A refusal without a response means the client left while waiting: nobody reads this.
    v.ok ? admit(handler, request, info, now, v.key, v.slot) : Promise.resolve(v.response ?? denyResponse(503));

  // Exempt requests (probes, metrics) skip the process-wide gates, never the per-client ones.
  const exempt = _exemptMatcher(o.exempt, what);
  const runExempt = (handler: GuardedHandler, request: Request, info: ServeInfo | undefined) => {
    const now = clock.now();
    const go = (v: KeyedVerdict) =>
      v.ok ? run(handler, request, info, now, _UNCOUNTED, v.key, v.slot) : Promise.resolve(v.response ?? denyResponse(503));
    if (keyed === undefined) return run(handler, request, info, now, _UNCOUNTED, undefined, undefined);
    const v = keyed.check(request, info?.peer, now);
    return v instanceof Promise ? v.then(go) : go(v);
  };

  const wrap = (handler: GuardedHandler) =>
    function guarded(request: Request, info?: ServeInfo): Promise<Response> {
      if (exempt !== undefined && exempt(request)) return runExempt(handler, request, info);
      if (shutdown?.aborted) return Promise.resolve(deny("draining", "draining", 503, 1000, true));
      if (memory?.shedding) return Promise.resolve(deny("memory", "over-ceiling", 503, 1000));
      const now = clock.now();
      if (loadIdle) {
        loadIdle = false;
        load!.start();
      } else if (load !== undefined && !load.admit(now)) return Promise.resolve(deny("load", "busy", 503, load.retryAfterMs));
      if (keyed === undefined) return admit(handler, request, info, now);
      const v = keyed.check(request, info?.peer, now);
      return v instanceof Promise ? v.then((r) => afterKeyed(handler, request, info, now, r)) : afterKeyed(handler, request, info, now, v);
    };

  return {
    config,
    wrap,
    get inFlight() {
      return concurrency.inFlight;
    },
    get stragglers() {
      return stragglers;
    },
    concurrency,
    memory,
    load,
    inFlightPerKey: keyed?.inFlight,
    work: {
      get inFlight() {
        return concurrency.inFlight;
      },
      idle: () => concurrency.idle(),
      abortAll(reason) {
        for (const ctx of live) {
          ctx.abandon(reason);
          // Where the runtime still waits for this request's answer, it gets one and the
          // connection closes, instead of hanging until the process ends.
          ctx.answer(deny("draining", "forced", 503, undefined, true));
        }
        longLived.force(reason);
      },
    },
    dispose() {
      longLived.dispose();
      loadIdle = false;
      memory?.dispose();
      load?.dispose();
    },
  };
}
