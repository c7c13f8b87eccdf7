import type { TimerHandle } from "./clock.ts";
import type { CleanupRegistry } from "./cleanup_registry.ts";
import type { PeerAddress } from "./server.ts";
import { BodyTooLargeError } from "./body_limit.ts";
import { _positiveIntOrInfinity } from "./_validate.ts";

/**
 * The per-request state route-level code may read and adjust. It lives from admission
 * until the handler settles.
 */
export interface RequestContext {
  /**
   * The body cap in bytes for this request (a positive integer or `Infinity`; undefined = no
   * cap), read when the body is first read. It starts as the cap the guard applied before the
   * handler ran (the service cap, or a `routeBodyLimits` entry's). Setting it may lower that
   * cap (a declared length over the new cap is refused with 413 at once); raising it above
   * throws a `RangeError`: declare the raise in `routeBodyLimits`, so it is known before the
   * handler runs.
   */
  bodyLimitBytes: number | undefined;
  /**
   * This request's deadline in ms, counted from its arrival. Setting it re-arms the
   * deadline; `Infinity` disables it (SSE streams, long upstream hops).
   */
  timeoutMs: number;
  /** Fires at the deadline, when the client disconnects, and on a forced drain. */
  readonly signal: AbortSignal;
  /**
   * Fires when the server starts shutting down (at the stop signal, before any pre-stop
   * delay). A long-lived response (SSE, a long poll) should finish on it, so the drain ends
   * clean instead of being forced at its deadline. Unlike `signal` it stays live after the
   * handler returned, while the response body streams; it is this request's own signal, so
   * listeners on it go away with the request.
   */
  readonly shutdownSignal: AbortSignal;
  /** When the request arrived, on the guard's clock. */
  readonly startedAt: number;
  /** The client key the limiters used, when one was computed. */
  readonly key: string | undefined;
  /**
   * Registers a cleanup that runs exactly once if the request is abandoned (client gone,
   * deadline, forced drain) before its handler settles. Returns an unregister function.
   */
  onAbandon(cleanup: (reason: unknown) => void | Promise<void>): () => void;
}

/** What the handler behind a guard receives as its second argument. */
export interface GuardedInfo {
  /** The transport peer, as the adapter saw it. */
  readonly peer: PeerAddress | undefined;
  readonly context: RequestContext;
}

/** What the guard needs from its owner to run one context. */
export interface _ContextHost {
  schedule(delayMs: number, fn: () => void, now: number): TimerHandle;
  now(): number;
  validateTimeout(ms: number): number;
  onDeadline(ctx: _Context): void;
  onAbandon(ctx: _Context, cleanup: (reason: unknown) => void | Promise<void>): () => void;
  abandonCleanups(ctx: _Context, reason: unknown): void;
  /** The request asked for its shutdown signal: fire it now if stopping, else at the stop. */
  watchShutdown(ctx: _Context): void;
}

// One reason on every runtime (they report a client leaving as AbortError, BadResource or
// Error("aborted")); the runtime's own reason is kept as the cause.
const _clientGone = (cause?: unknown) => Object.assign(new DOMException("The client disconnected", "AbortError"), { cause });

/**
 * The guard's implementation of {@linkcode RequestContext}, and of the handler's
 * {@linkcode GuardedInfo} (its `context` is itself); not exported from the package.
 */
export class _Context implements RequestContext, GuardedInfo {
  /** The declared Content-Length, when there is one (set by the guard). */
  declaredBytes: number | undefined = undefined;
  readonly startedAt: number;
  readonly key: string | undefined;
  /** True once the body passed its cap: the answer becomes 413 whatever the handler says. */
  overflowed = false;
  /** True once the handler settled. */
  settled = false;
  abandonedBy: unknown = undefined;
  /** True from a 408 until the handler settles. */
  straggling = false;
  /** Cleanups registered through onAbandon, created on first use. */
  cleanups: CleanupRegistry | undefined = undefined;
  /** Fails the request's body stream (a pending read rejects); set by the guard when there is a body. */
  failBody: ((reason: unknown) => void) | undefined = undefined;
  /** Resolves the guard's answer; set by the guard. */
  resolve: ((res: Response) => void) | undefined = undefined;
  #answered = false;
  #bodyLimit: number | undefined;
  /** The cap the guard applied before the handler ran: the handler may lower it, never raise it. */
  readonly #bodyLimitBefore: number | undefined;
  readonly #host: _ContextHost;
  readonly #request: Request;
  readonly #info: { readonly peer?: PeerAddress } | undefined;
  #timeoutMs: number;
  #deadline: TimerHandle | undefined;
  #controller: AbortController | undefined;
  #shutdown: AbortController | undefined;
  #watching = false;

  constructor(
    host: _ContextHost,
    request: Request,
    info: { readonly peer?: PeerAddress } | undefined,
    startedAt: number,
    timeoutMs: number,
    bodyLimit: number | undefined,
    key: string | undefined,
  ) {
    this.#host = host;
    this.#request = request;
    this.#info = info;
    this.startedAt = startedAt;
    this.#timeoutMs = timeoutMs;
    this.#bodyLimit = bodyLimit;
    this.#bodyLimitBefore = bodyLimit;
    this.key = key;
  }

  /** The transport peer, read from the adapter's info only when asked. */
  get peer(): PeerAddress | undefined {
    return this.#info?.peer;
  }

  get context(): RequestContext {
    return this;
  }

  get bodyLimitBytes(): number | undefined {
    return this.#bodyLimit;
  }

  set bodyLimitBytes(bytes: number | undefined) {
    const what = "set the body cap";
    if (bytes !== undefined) _positiveIntOrInfinity(what, "bodyLimitBytes", bytes);
    const before = this.#bodyLimitBefore ?? Infinity;
    if ((bytes ?? Infinity) > before) {
      throw new RangeError(
        `Cannot ${what} as "bodyLimitBytes" must be at most ${before} (the cap applied before the handler ran; ` +
          `declare a larger cap for this route in "routeBodyLimits"): current value is ${bytes}`,
      );
    }
    this.#bodyLimit = bytes;
    if (bytes !== undefined && this.declaredBytes !== undefined && this.declaredBytes > bytes && !this.overflowed) {
      // Refused as the guard would have refused it upfront: any read fails, the answer is 413.
      this.overflowed = true;
      this.failBody?.(new BodyTooLargeError(bytes));
    }
  }

  get timeoutMs(): number {
    return this.#timeoutMs;
  }

  set timeoutMs(ms: number) {
    this.#timeoutMs = this.#host.validateTimeout(ms);
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
    this.watchClient();
    return this.#host.onAbandon(this, cleanup);
  }

  /** (Re)schedules the deadline from the arrival time; `now` saves a clock read when the caller has one. */
  arm(now: number = this.#host.now()): void {
    this.#deadline?.cancel();
    this.#deadline = undefined;
    if (this.#timeoutMs === Infinity) return;
    const left = this.startedAt + this.#timeoutMs - now;
    this.#deadline = this.#host.schedule(Math.max(0, left), () => this.#host.onDeadline(this), now);
  }

  /** Listens for the client leaving, once, only when someone asked for the signal or a cleanup. */
  watchClient(): void {
    if (this.#watching || this.settled) return;
    this.#watching = true;
    const client = this.#request.signal;
    if (client.aborted) this.abandon(_clientGone(client.reason));
    else client.addEventListener("abort", () => this.abandon(_clientGone(client.reason)), { once: true });
  }

  /** The request is given up before its handler settled: fire the signal and the cleanups, once. */
  abandon(reason: unknown): void {
    if (this.settled || this.abandonedBy !== undefined) return;
    this.abandonedBy = reason;
    this.#deadline?.cancel();
    this.#controller?.abort(reason);
    // A handler blocked reading a trickling body would otherwise wait for the client forever.
    this.failBody?.(reason);
    this.#host.abandonCleanups(this, reason);
  }

  /** Answers the client, once; returns whether this call did. */
  answer(res: Response): boolean {
    if (this.#answered || this.resolve === undefined) return false;
    this.#answered = true;
    this.resolve(res);
    return true;
  }

  /** The handler settled: later abandonment is a no-op. */
  finish(): void {
    this.settled = true;
    this.#deadline?.cancel();
    this.cleanups?.complete();
  }
}
