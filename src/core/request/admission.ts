// What one request holds from its first gate until its handler settles: its client key, the
// per-key slot and the permit (released once, in one place), its declared length and body cap,
// its deadline, its abandon cleanups, the hook that fails its body stream, and its answer.
// Internal: handlers see only the narrow RequestContext view (request_context.ts).
import type { TimerHandle } from "../clock.ts";
import type { CleanupRegistry } from "./cleanup_registry.ts";
import type { DeclaredLength } from "./body_limit.ts";
import type { HygieneEvent } from "../events.ts";
import { BodyTooLargeError, declaredLength } from "./body_limit.ts";
import { _RequestView, type ServeInfo } from "./request_context.ts";
import { _positiveIntOrInfinity } from "../_validate.ts";
import { _answering } from "../errors.ts";
import type { Permit } from "../overload/permit.ts";

/** What the guard lends every admission (one object, shared). */
export interface _AdmissionHost {
  /** Schedules `a`'s deadline `delayMs` from `now` (the guard answers 408 when it passes). */
  scheduleDeadline(delayMs: number, now: number, a: _Admission): TimerHandle;
  now(): number;
  validateTimeout(ms: number): number;
  newCleanups(): CleanupRegistry;
  /** The request asked for its shutdown signal: fire it now if stopping, else at the stop. */
  watchShutdown(a: _Admission): void;
  /** Emits through the guard's sinks (a route-level refusal). */
  report(event: HygieneEvent): void;
  /** Computes `a.key` when no keyed gate did (on failure: a fault reported, `a.keyFailed` set). */
  computeKey(a: _Admission): void;
  /** How many forced drains the guard has had: an admission is forced out by one that came after it started. */
  readonly forcedDrains: number;
}

// One reason on every runtime (they report a client leaving as AbortError, BadResource or
// Error("aborted")); the runtime's own reason is kept as the cause.
// Answered 500 if a route rethrows it (nobody receives it; the outcome is "aborted").
const _clientGone = (cause?: unknown) => _answering(Object.assign(new DOMException("The client disconnected", "AbortError"), { cause }), 500);

export class _Admission {
  /**
   * The request. On Node's head path it is set only when the adapter builds it
   * ({@linkcode translated}): the gates that run before read nothing of it (gate.ts `fromHead`).
   */
  request: Request;
  readonly info: ServeInfo | undefined;
  readonly startedAt: number;
  /**
   * A gate made it wait (a later turn, a shared store's answer): the gates after it run later
   * than `startedAt`. A rate limit then reads the clock to charge it and date its denial: dated
   * from the start, a request that waited at the load gate was told a `Retry-After` as much too short.
   */
  waited = false;
  /** The client key, once a keyed gate (or a read of `context.key`) computed it. */
  key: string | undefined = undefined;
  /** The guard's key function failed for this request (reported once). */
  keyFailed = false;
  /** It holds its key's slot of the per-key in-flight cap already (taken before a wait at the load gate). */
  keySlot = false;
  /**
   * The body stream: null when there is none; undefined when the head declares one that is
   * not read yet (the body cap gate reads it).
   */
  body: ReadableStream<Uint8Array> | null | undefined = null;
  /** The declared length (framing gate). */
  declared: DeclaredLength | undefined = undefined;
  /** The request the handler gets: the original, or one carrying the capped body. */
  forward: Request;
  /** The concurrency permit it holds (gate 7), which a body read slowly may park (_body_waits.ts). */
  permit: Permit | undefined = undefined;
  /** True once the body passed its cap: the answer becomes 413 whatever the handler says. */
  overflowed = false;
  /** True once the body was read to its end. */
  bodyEnded = false;
  /** Reading the runtime's body failed (the client left mid-body): the handler's failure is the client's. */
  bodyFailed = false;
  /** True once the handler settled. */
  settled = false;
  abandonedBy: unknown = undefined;
  /** True from a 408 until the handler settles. */
  straggling = false;
  /** Fails the request's body stream (a pending read rejects); set when the body is capped. */
  failBody: ((reason: unknown) => void) | undefined = undefined;
  /**
   * The deadline gate passed: the deadline is armed once the handler turns asynchronous
   * (a synchronous answer cannot outlive its deadline, so it never costs a timer).
   */
  timed = false;
  /** The status of the answer given (a 408, a forced drain's 503, or the handler's own), once given. */
  sentStatus: number | undefined = undefined;
  /** Resolves the guard's answer; set when the handler starts. */
  resolve: ((res: Response | undefined) => void) | undefined = undefined;
  /**
   * How the answer is handed over when not as the resolved value (hygiene()): see
   * guarded_fetch.ts's _Delivery. Set by the guard's fetch when it serves with one.
   */
  delivery: { read(info: ServeInfo | undefined): unknown; deliver(res: Response, info: ServeInfo | undefined, early: boolean): void } | undefined = undefined;
  timeoutMs: number;
  /** The arming tick in which it joined the guard's running handlers (_lazy_arming.ts). */
  armTick = 0;
  /** Links in the guard's list of running handlers (_linked_list.ts). */
  prevLink: _Admission | undefined = undefined;
  nextLink: _Admission | undefined = undefined;
  /** The guard's forced drains when it started (a later one forces it out of any wait). */
  readonly drainsAtStart: number;
  readonly #host: _AdmissionHost;
  /** What the gates handed out (at most a per-key slot, then a permit), released last first, once. */
  #first: Disposable | undefined = undefined;
  #second: Disposable | undefined = undefined;
  #bodyLimit: number | undefined = undefined;
  /** The cap applied before the handler ran: the handler may lower it, never raise it. */
  #bodyLimitBefore: number | undefined = undefined;
  /** A request without a body: its route's cap, looked up only if the handler raises it (body_cap.ts). */
  #routeCap: ((request: Request) => number | undefined) | undefined = undefined;
  #cleanups: CleanupRegistry | undefined = undefined;
  #deadline: TimerHandle | undefined = undefined;
  #controller: AbortController | undefined = undefined;
  #shutdown: AbortController | undefined = undefined;
  #watching = false;
  #view: _RequestView | undefined = undefined;

  constructor(host: _AdmissionHost, request: Request, info: ServeInfo | undefined, startedAt: number, timeoutMs: number) {
    this.#host = host;
    this.request = request;
    this.forward = request;
    this.info = info;
    this.startedAt = startedAt;
    this.timeoutMs = timeoutMs;
    this.drainsAtStart = host.forcedDrains;
  }

  /** The adapter built the request (Node's head path): the gates from here on and the handler read it. */
  translated(request: Request): void {
    this.request = this.forward = request;
  }

  /** What the handler receives: the public view (its `context` is itself). */
  get view(): _RequestView {
    return (this.#view ??= new _RequestView(this));
  }

  /**
   * Keeps `held` (a slot, a permit) until {@linkcode release}. Two places, not a stack: the
   * list has two gates that hand something out (DisposableStack is not on Node 20 either).
   */
  hold(held: Disposable): void {
    if (this.#first === undefined) this.#first = held;
    else if (this.#second === undefined) this.#second = held;
    else throw new TypeError("An admission holds at most two things");
  }

  /**
   * Gives back everything held, last first, once: on refusal, or when the handler settles.
   * `completed`: the handler answered normally, so what measures latency (a permit's
   * `complete()`) takes this request as a sample; a refused, aborted or timed-out one is not.
   */
  release(completed = false): void {
    const first = this.#first;
    const second = this.#second;
    this.#first = this.#second = undefined;
    if (second !== undefined) _give(second, completed);
    if (first !== undefined) _give(first, completed);
  }

  /**
   * The body cap gate's verdict: the cap that applies before the handler runs. `routeCap`: the
   * request has no body, and `cap` is the service's, its route not looked up.
   */
  setCapBefore(cap: number | undefined, routeCap?: (request: Request) => number | undefined): void {
    this.#bodyLimit = cap;
    this.#bodyLimitBefore = cap;
    this.#routeCap = routeCap;
  }

  get bodyLimit(): number | undefined {
    return this.#bodyLimit;
  }

  /** The handler's `context.bodyLimitBytes = bytes`: validated, lowering only. */
  setBodyLimit(bytes: number | undefined): void {
    const what = "set the body cap";
    if (bytes !== undefined) _positiveIntOrInfinity(what, "bodyLimitBytes", bytes);
    if (this.#routeCap !== undefined && (bytes ?? Infinity) > (this.#bodyLimitBefore ?? Infinity)) {
      // A raise for a request without a body: allowed up to its route's declared cap, as with one.
      this.#bodyLimitBefore = this.#routeCap(this.request);
      this.#routeCap = undefined;
    }
    const before = this.#bodyLimitBefore ?? Infinity;
    if ((bytes ?? Infinity) > before) {
      throw new RangeError(
        `Cannot ${what} as "bodyLimitBytes" must be at most ${before} (the cap applied before the handler ran; ` +
          `declare a larger cap for this route in "routeBodyLimits"): current value is ${bytes}`,
      );
    }
    this.#bodyLimit = bytes;
    // The framing gate reads no header of a GET or HEAD whose adapter did not say it declares a
    // body (on Deno and Bun that read would cost every GET): read here, where a route lowers the cap.
    if (bytes !== undefined && this.declared === undefined) this.declared = declaredLength(this.request.headers);
    const declared = this.declared?.kind === "length" ? this.declared.bytes : undefined;
    if (bytes !== undefined && declared !== undefined && declared > bytes && !this.overflowed) {
      // Refused as the guard would have refused it upfront: any read fails, the answer is 413.
      this.overflowed = true;
      const error = new BodyTooLargeError(bytes);
      if (this.failBody !== undefined) this.failBody(error);
      // The runtime's own body, handed on uncounted (body_cap.ts: a small one that no cap or
      // deadline watches): cancelled unless a read has it already, so reading it fails (or,
      // through a reader of its own, finds it ended) rather than hand over what the cap refused.
      else if (this.body?.locked === false) this.body.cancel(error).catch(() => {});
    }
  }

  /** The handler's `context.timeoutMs = ms`: validated, re-arms the deadline. */
  setTimeoutMs(ms: number): void {
    this.timeoutMs = this.#host.validateTimeout(ms);
    if (!this.settled && this.abandonedBy === undefined) this.arm();
  }

  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      if (this.abandonedBy !== undefined) this.#controller.abort(this.abandonedBy);
      else this.watchClient();
    }
    return this.#controller.signal;
  }

  get shutdownSignal(): AbortSignal {
    if (this.#shutdown === undefined) {
      this.#shutdown = new AbortController();
      this.#host.watchShutdown(this);
    }
    return this.#shutdown.signal;
  }

  /** True once someone asked for the shutdown signal (its response may be long-lived). */
  get watchesShutdown(): boolean {
    return this.#shutdown !== undefined;
  }

  /** The server started shutting down. */
  fireShutdown(reason: unknown): void {
    this.#shutdown?.abort(reason);
  }

  onAbandon(cleanup: (reason: unknown) => void | Promise<void>): () => void {
    if (this.#cleanups === undefined) {
      // The list is made on the first cleanup: it starts in the request's state, so one added
      // after a 408, a forced drain or the client leaving runs at once, and one added after
      // the handler settled is dropped.
      const list = (this.#cleanups = this.#host.newCleanups());
      if (this.settled) list.complete();
      else if (this.abandonedBy !== undefined) list.abandon(this.abandonedBy);
    }
    this.watchClient();
    return this.#cleanups.add(cleanup);
  }

  /** A route-level refusal of this request, reported through the guard's sinks. */
  report(event: HygieneEvent): void {
    this.#host.report(event);
  }

  /**
   * The client key: the keyed gates', else the guard's key function's, computed on first read
   * — once: a function that failed (a fault reported) is not called again for this request.
   */
  clientKey(): string | undefined {
    if (this.key === undefined && !this.keyFailed) this.#host.computeKey(this);
    return this.key;
  }

  /** (Re)schedules the deadline from the arrival time; `now` saves a clock read when the caller has one. */
  arm(now: number = this.#host.now()): void {
    this.#deadline?.cancel();
    this.#deadline = undefined;
    if (this.timeoutMs === Infinity) return;
    const left = this.startedAt + this.timeoutMs - now;
    this.#deadline = this.#host.scheduleDeadline(Math.max(0, left), now, this);
  }

  /** Arms the deadline unless the handler already re-armed it (it set its own timeout). */
  armOnce(now: number): void {
    if (this.#deadline === undefined) this.arm(now);
  }

  /** Listens for the client leaving, once, only when someone asked for the signal or a cleanup. */
  watchClient(): void {
    if (this.#watching || this.settled) return;
    this.#watching = true;
    const client = this.request.signal;
    if (client.aborted) this.abandon(_clientGone(client.reason));
    else client.addEventListener("abort", () => this.abandon(_clientGone(client.reason)), { once: true });
  }

  /**
   * Its body's read failed (the connection broke mid-body: the client left): the request is
   * abandoned as when the client leaves, and the read fails with that reason — the guard's,
   * which a framework's error handler answers quietly (Hono: `getResponse()`), where the
   * runtime's own error (node's `aborted`, Deno's `BadResource`, Bun's) printed a stack a
   * request any client could cause (a logs review).
   */
  bodyBroke(error: unknown): unknown {
    this.bodyFailed = true;
    this.abandon(_clientGone(error));
    return this.abandonedBy ?? _clientGone(error);
  }

  /** The request is given up before its handler settled: fire the signal and the cleanups, once. */
  abandon(reason: unknown): void {
    if (this.settled || this.abandonedBy !== undefined) return;
    this.abandonedBy = reason;
    this.#deadline?.cancel();
    this.#controller?.abort(reason);
    // A handler blocked reading a trickling body would otherwise wait for the client forever.
    this.failBody?.(reason);
    this.#cleanups?.abandon(reason);
  }

  /**
   * Its long-lived body (tracked after the handler settled) was cut: by the runtime (the client
   * left) or by a forced drain. The signal fires with the reason; the abandon cleanups do not
   * (they are the handler's run's, and ran or were dropped when it settled).
   */
  bodyCut(reason: unknown, clientLeft: boolean): void {
    if (this.abandonedBy !== undefined) return;
    this.abandonedBy = clientLeft ? _clientGone(reason) : reason;
    this.#controller?.abort(this.abandonedBy);
  }

  /** Answers the client, once; returns whether this call did. */
  answer(res: Response): boolean {
    if (this.sentStatus !== undefined || this.resolve === undefined) return false;
    this.sentStatus = res.status;
    if (this.delivery === undefined) this.resolve(res);
    else {
      // Early: the handler still runs (a 408, a forced drain's 503), and may answer later.
      this.delivery.deliver(res, this.info, !this.settled);
      this.resolve(undefined);
    }
    return true;
  }

  /** The handler settled (`completed`: normally): later abandonment is a no-op; what it held is given back. */
  finish(completed = false): void {
    this.settled = true;
    this.#deadline?.cancel();
    this.#cleanups?.complete();
    this.release(completed && this.abandonedBy === undefined);
  }
}

const _give = (held: Disposable & { complete?: () => void }, completed: boolean) => {
  if (completed && held.complete !== undefined) held.complete();
  else held[Symbol.dispose]();
};
