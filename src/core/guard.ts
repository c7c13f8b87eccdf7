import { createCleanupRegistry } from "./request/cleanup_registry.ts";
import { systemClock } from "./clock.ts";
import { _processGates } from "./_guard_state.ts";
import { resolveConfig } from "./config.ts";
import { createDeadlineWheel } from "./request/deadline_wheel.ts";
import type { DenyEvent, DenyLayer, EventSink } from "./events.ts";
import { _emit } from "./_emit.ts";
import { consoleLogger, type Host } from "./host/host.ts";
import { _guardKey, _keyedParts } from "./limits/keyed_gates.ts";
import { _keyFor } from "./gates/_client_key.ts";
import { _exemptMatcher } from "./request/exempt.ts";
import { _Admission, type _AdmissionHost } from "./request/admission.ts";
import { _createLongLived } from "./request/_long_lived.ts";
import { _handlerRun } from "./request/handler_run.ts";
import { _durationMs, type _KeyList, _optionalBoolean, _optionalFunction, _options } from "./_validate.ts";
import { _GUARD_KEYS } from "./_option_keys.ts";
import { _refusalHeaders } from "./request/refusal_headers.ts";
import { _servedInfo } from "./host/peer_address.ts";
import {
  _GATES,
  type Gate,
  type GateRefusal,
  type GateVerdict,
  _refusalResponse,
  _clonedRefusal,
  _drainingGate,
  _memoryGate,
  _loadGate,
  _framingGate,
  _rateLimitGate,
  _keyInFlightGate,
  _concurrencyGate,
  _bodyCapGate,
  _deadlineGate,
  _FORCED,
} from "./gates/mod.ts";
import type { Guard, GuardedHandler, GuardOptions, ServeInfo } from "./guard_types.ts";
import { _FETCH, _HEAD, type _Delivery, type _Fetch, type _InfoHandler, type _ServingFetch } from "./guarded_fetch.ts";
import { _passHead, type _HeadSteps } from "./head_path.ts";

export type { Guard, GuardedHandler, GuardOptions, GuardWork, ServeInfo } from "./guard_types.ts";

export {
  _guardedFetch,
  _HEAD,
  type _AnswerHead,
  type _Delivery,
  type _DeliveringFetch,
  type _Fetch,
  type _HeadFetch,
  type _InfoHandler,
  type _ServingFetch,
  type _Translate,
} from "./guarded_fetch.ts";
import { _safeLogger } from "./_user_code.ts";
import { _BodyWaits } from "./request/_body_waits.ts";
import { _leavesUploadUnread } from "./request/_unread_upload.ts";
import { _refusingUpload } from "./request/connection_drop.ts";
export { type _HeadAnswer, _refusalHead } from "./gates/refuse.ts";

/**
 * Composes the request path of DESIGN.md as one list of gates, cheapest refusal first:
 * draining, memory ceiling, load monitor, framing, keyed rate limits, per-key in-flight cap,
 * concurrency limit, body cap, deadline, then the handler. What a request holds (its slot, its
 * permit) is released once, when the handler settles or a later gate refuses; a permit is
 * held until the handler's promise settles, so the in-flight count is true work.
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
  return _createGuard(options, host, _GUARD_KEYS);
}

/** {@linkcode createGuard}; `known`: the options it may be given (serve() checks its own, a superset, first). */
export function _createGuard(options: GuardOptions | undefined, host: Host | undefined, known: _KeyList<GuardOptions> | undefined): Guard {
  const what = "create guard";
  const o = _options(what, options, known);
  // Checked here, not at their first call: a hook that is no function failed inside the
  // library's own guard against a throwing hook, and every event, metric and log line was lost
  // without a word (a review: `log: "console"`, `onDeny: "x"`).
  for (const field of ["log", "onDeny", "onEvent", "onError"] as const) _optionalFunction(what, field, o[field]);
  _optionalBoolean(what, "rateLimitHeaders", o.rateLimitHeaders);
  const config = resolveConfig(o);
  const clock = o.clock ?? host?.clock ?? systemClock;
  const log = _safeLogger(o.log ?? host?.log ?? consoleLogger);
  const sinks = [o.onEvent, o.onDeny === undefined ? undefined : (e: { type: string }) => e.type === "deny" && o.onDeny!(e as DenyEvent)];
  const sink: EventSink = (event) => _emit(sinks, event);
  const reporting = o.onEvent !== undefined || o.onDeny !== undefined;
  // The hook is the user's: one that throws must not leave the request unanswered (its 500 is
  // still sent), so its failure is logged, as a broken event sink's is swallowed (_emit.ts).
  const hook = o.onError;
  const hookFailed = (failure: unknown) => {
    try {
      log({ level: "error", msg: "onError hook failed", error: failure });
    } catch {
      // A broken logger must never turn an answer into a crash.
    }
  };
  const onError = (error: unknown, request: Request): void => {
    try {
      if (hook === undefined) log({ level: "error", msg: "handler failed", error });
      else {
        // An async hook that rejects is logged too, never an unhandled rejection.
        const result: unknown = hook(error, request);
        if (typeof (result as PromiseLike<unknown> | undefined)?.then === "function") Promise.resolve(result).catch(hookFailed);
      }
    } catch (failure) {
      hookFailed(failure);
    }
  };
  const { concurrency, memory, load, spare } = _processGates(what, o, config, clock, host);
  const deadlines = createDeadlineWheel({ clock });
  const shutdown = o.shutdown?.signal;
  const guardKey = _guardKey(o);
  const keyed = _keyedParts(o, sink, clock, guardKey);
  const longLived = _createLongLived(o.stopping?.signal ?? shutdown, clock);
  const timed = config.requestTimeoutMs !== Infinity;
  // Bodies read slowly give up their permits' places (_body_waits.ts): under the adaptive limit
  // only (a fixed limit never parks, so its bodies need no watching).
  const bodyWaits = concurrency.adaptive ? new _BodyWaits(clock, concurrency) : undefined;

  const refusal = host?.cloneResponses === true ? _clonedRefusal : _refusalResponse;
  // The service's own headers on every refusal (CORS): off, the refusal path does nothing more.
  const addHeaders = _refusalHeaders(what, o.refusalHeaders, sink);
  // The one place a refusal is reported (a gate's limiter may have reported it already).
  const reportDeny = (layer: DenyLayer, r: GateRefusal): void => {
    if (reporting && r.reported !== true) _emit(sinks, { type: "deny", layer, reason: r.reason, status: r.status, retryAfterMs: r.retryAfterMs });
  };
  // The one place a refusal's answer is built (the head path's parts aside: head_path.ts).
  const refuse = (layer: DenyLayer, r: GateRefusal, a?: _Admission): Response => {
    reportDeny(layer, r);
    const res = r.response ?? refusal(r.status, r.retryAfterMs, r.close);
    return addHeaders === undefined ? res : addHeaders(res, a?.request);
  };

  const keyInFlight = keyed?.inFlight === undefined ? undefined : _keyInFlightGate(keyed, sink);
  const loadGate = load === undefined ? undefined : _loadGate(load, clock, { waitMs: concurrency.shedWaitMs, maxWaiting: concurrency.maxWaiting }, concurrency, spare, keyInFlight?.reserve);
  // DESIGN.md's request path, in its order. Gate 0, the connection cap, acts per connection,
  // before any request exists: the adapter reports connections to the connection gate
  // (connection_gate.ts, built by serve) and refuses there; this list starts at gate 1.
  const gates: readonly Gate[] = [
    shutdown === undefined ? undefined : _drainingGate(shutdown), //          1 draining
    memory === undefined ? undefined : _memoryGate(memory), //                2 memory ceiling
    loadGate, //                                                              3 load monitor
    _framingGate(), //                                                        4 framing
    keyed?.rate === undefined ? undefined : _rateLimitGate(keyed, sink, clock), //   5 keyed rate limits
    keyInFlight, //                                                           6 per-key in-flight
    _concurrencyGate(concurrency), //                                         7 concurrency limit
    _bodyCapGate(config.bodyLimitBytes, config.routeBodyLimits, timed, bodyWaits), // 8 body cap
    timed ? _deadlineGate() : undefined, //                                   9 request timeout
  ].filter((g): g is Gate => g !== undefined);
  // Exempt requests (probes, metrics) skip the process-wide gates, never the per-client ones.
  const exemptGates = gates.filter((g) => !g.processWide);

  // Gate 10, the handler: its run, its one answer, and its deadline's 408 (handler_run.ts).
  const handlerRun = _handlerRun({ clock, requestTimeoutMs: config.requestTimeoutMs, longLived, refuse, onError, onEvent: o.onEvent });
  const { run, onDeadline } = handlerRun;
  const admissionHost: { -readonly [K in keyof _AdmissionHost]: _AdmissionHost[K] } = {
    forcedDrains: 0,
    // The admission itself is the wheel's argument: no closure a deadline.
    scheduleDeadline: (ms, now, a) => deadlines.schedule(ms, onDeadline, now, a),
    now: () => clock.now(),
    validateTimeout: (ms) => _durationMs("set the request timeout", "timeoutMs", ms, { infinity: true }),
    newCleanups: () => createCleanupRegistry(log),
    watchShutdown: (a) => longLived.watch(a),
    // Route-level refusals (Hono's rateLimit, inFlightCap) reach the same sinks as the gates'.
    report(event) {
      if (reporting) _emit(sinks, event);
    },
    computeKey: (a) => {
      if (_keyFor(a, guardKey, sink) !== undefined) a.keyFailed = true;
    },
  };

  // A forced drain (work.abortAll) came since a request started: still waiting at a gate, it
  // goes no further. One that starts later is served as the guard serves it (a guard used again
  // after its drain: tests, an in-process restart). Counted, not timed: a coarse or manual
  // clock reads a later request's start as the drain's instant.
  const forced = (a: _Admission) => a.drainsAtStart !== admissionHost.forcedDrains;
  // Runs the gates from `i` on: synchronously until one answers with a promise (a shed wait),
  // then on from there once it settles. The first refusal ends the request, answered at once.
  // A gate that throws (a runtime's Request it cannot copy) lets go of what the request holds
  // before the failure reaches the adapter's 500: a permit taken by an earlier gate would
  // otherwise never come back.
  const pass = (handler: _InfoHandler, a: _Admission, list: readonly Gate[], i: number, withInfo: boolean): Response | Promise<Response> => {
    try {
      for (; i < list.length; i++) {
        const v = list[i]!.admit(a);
        if (v === undefined) continue;
        if (typeof (v as PromiseLike<GateVerdict>).then === "function") return waited(handler, a, list, i, v as Promise<GateVerdict>, withInfo);
        return denied(a, list[i]!, v as GateRefusal);
      }
    } catch (error) {
      a.release();
      throw error;
    }
    return run(handler, a, withInfo);
  };
  // Gate `i` answered with a promise (a wait): the path goes on from the next gate once it passes.
  // A forced drain meanwhile ends it there (what the gates gave is given back): whatever the
  // wait was (a shared store's answer, a slot), no handler starts after the drain.
  const waited = (handler: _InfoHandler, a: _Admission, list: readonly Gate[], i: number, v: Promise<GateVerdict>, withInfo: boolean): Promise<Response> => {
    const gate = list[i]!;
    const later = v.then((r: GateVerdict) => (forced(a) ? denied(a, gate, _FORCED) : r === undefined ? ((a.waited = true), pass(handler, a, list, i + 1, withInfo)) : denied(a, gate, r)));
    // A refusal after the wait is delivered like any other asynchronous answer.
    const delivery = a.delivery;
    return delivery === undefined ? later : later.then((res) => (res === undefined ? res : void delivery.deliver(res, a.info, false)) as never);
  };
  const denied = (a: _Admission, gate: Gate, r: GateRefusal): Response => {
    a.release();
    const res = refuse(r.layer ?? gate.layer, r, a);
    // An upload it leaves unread ends its connection, as the body cap's 413 does (Deno: dropped after the answer, as the 413).
    return r.close !== true && _leavesUploadUnread(a) ? _refusingUpload(res) : res;
  };

  const exempt = _exemptMatcher(o.exempt, what, sink);
  const serving = (handler: _InfoHandler, withInfo: boolean, delivery?: _Delivery): _Fetch => {
    const guarded: _ServingFetch = function guarded(request: Request, info?: ServeInfo): Response | Promise<Response> {
      const a = new _Admission(admissionHost, request, info, clock.now(), config.requestTimeoutMs);
      if (delivery !== undefined) a.delivery = delivery;
      return pass(handler, a, exempt !== undefined && exempt(request) ? exemptGates : gates, 0, withInfo);
    };
    if (delivery !== undefined) return guarded;
    const steps: _HeadSteps = {
      pass: (a, list, i) => pass(handler, a, list, i, withInfo),
      reportDeny,
      forced,
    };
    guarded[_HEAD] = (info, translate, answer) => {
      // Which gates apply to an exempt request is a question about the request, and so are
      // the service's refusal headers (a function of it; added to a built Response either way).
      if (exempt !== undefined || addHeaders !== undefined) {
        translate((request) => guarded(request, info), info);
        return undefined;
      }
      return _passHead(steps, new _Admission(admissionHost, undefined as never, info, clock.now(), config.requestTimeoutMs), gates, translate, answer);
    };
    return guarded;
  };
  const wrap = (handler: GuardedHandler) => {
    const fetch = serving(handler, false);
    return (request: Request, info?: ServeInfo): Promise<Response> => {
      let res;
      try {
        // The runtime's own second argument (deno serve's info, Bun's server) gives the peer.
        res = fetch(request, _servedInfo(info, request));
      } catch (error) {
        return Promise.reject(error); // a promise-returning function fails by rejecting
      }
      return res instanceof Promise ? res : Promise.resolve(res);
    };
  };

  return {
    config,
    wrap,
    get inFlight() {
      return concurrency.inFlight;
    },
    get stragglers() {
      return handlerRun.stragglers;
    },
    get waitingForTurn() {
      return loadGate === undefined ? 0 : loadGate.waiting;
    },
    concurrency,
    memory,
    load,
    inFlightPerKey: keyed?.inFlight,
    work: {
      get inFlight() {
        return concurrency.inFlight;
      },
      get streaming() {
        return longLived.open;
      },
      // No permit held and no request waiting for a later turn (one that waits holds nothing yet).
      async idle() {
        for (;;) {
          await concurrency.idle();
          if (loadGate === undefined || loadGate.waiting === 0) return;
          await loadGate.emptied();
        }
      },
      abortAll(reason) {
        // Requests still waiting at a gate (the admission queue, a key's slot, a later turn) are
        // answered the forced 503 too, now; any other wait (a shared store's answer) when it
        // ends: a permit coming back, or a store answering, later must not start their handlers.
        admissionHost.forcedDrains++;
        for (const gate of gates) gate.refuseWaiting?.();
        for (const a of handlerRun.running()) {
          a.abandon(reason);
          // Where the runtime still waits for this request's answer, it gets one and the
          // connection closes, instead of hanging until the process ends.
          if (a.sentStatus === undefined) a.answer(refuse("draining", _FORCED, a));
        }
        longLived.force(reason);
      },
    },
    dispose() {
      handlerRun.dispose();
      bodyWaits?.dispose();
      longLived.dispose();
      loadGate?.dispose();
      memory?.dispose();
      load?.dispose();
    },
    [_GATES]: gates,
    [_FETCH]: serving,
  } as Guard;
}
