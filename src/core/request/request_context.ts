import type { PeerAddress } from "../host/server.ts";
import type { AbortSignalLike } from "../overload/permit.ts";
import type { DeclaredLength } from "./body_limit.ts";
import type { HygieneEvent } from "../events.ts";
import { _REPORT, type _Reporting, _ROUTE_KEY } from "./route_report.ts";

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
  /**
   * The client key: the one the guard's keyed limits used, else the guard's `clientKey` of this
   * request, computed on first read (route-level limits key by it). Undefined when the key
   * function failed (a fault event says why).
   */
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

/**
 * What an adapter passes along with each request. `peer` may be a getter: the guard reads
 * it only when a keyed gate or the handler asks (on Bun, finding the peer costs a call).
 */
export interface ServeInfo {
  readonly peer?: PeerAddress | undefined;
  /**
   * Whether the request head declares a body (Content-Length or Transfer-Encoding), from an
   * adapter that knows it cheaply (node; deno says `false` when the request's body is null).
   * When true, a GET or HEAD has its declared length checked too; when false the framing
   * gate reads nothing of the request; otherwise a GET or HEAD is never asked for its headers
   * (on Deno and Bun that costs every GET a header read).
   */
  readonly declaresBody?: boolean | undefined;
  /**
   * The declared length as the runtime's own parser read it (node), given with
   * `declaresBody: true`: the framing gate then reads no header of the request.
   */
  readonly declared?: DeclaredLength | undefined;
  /**
   * The request target as the client sent it (node: the path and query), where the adapter has
   * it without building the Request; else the guard reads the request's `url`.
   */
  readonly target?: string | undefined;
  /**
   * True once the client's connection has closed, from an adapter that knows it without the
   * request's `signal` (node: reading the signal makes @hono/node-server build the full
   * Request). Where absent, the request's signal says.
   */
  readonly clientGone?: boolean | undefined;
  /**
   * Fires when the client's connection closes, from an adapter that has a cheaper event for
   * it than the request's `signal` (node: the response's close event). A request waiting in
   * the admission queue listens on it, so that it leaves the queue at once. Where absent, the
   * request's signal does.
   */
  readonly clientLeft?: AbortSignalLike | undefined;
  /**
   * Tells the client to send its body (`100 Continue`), from an adapter whose runtime lets the
   * server decide (node, for a request with `Expect: 100-continue`). The guard calls it once,
   * when the body is first read — or, for a body it passes on untouched, once every gate has
   * admitted the request — so a request refused first (a 413 over the cap, a 429, a 503) is
   * answered without it and the client never sends the body.
   */
  readonly continueBody?: (() => void) | undefined;
  /**
   * Whether the runtime takes no answer to `request` but its handler's own (Deno, for a
   * WebSocket handshake the handler upgraded: any other answer closes the server's listener). Asked only at the request's deadline: when true the deadline lapses
   * — no 408, and the handler's signal does not fire either, as a handler that fails on it
   * after upgrading gets a 500 that closes the listener just the same (a review: the 408 closed
   * it, and the server stopped).
   */
  readonly upgrading?: ((request: Request) => boolean) | undefined;
}

/**
 * Whether `request` is a WebSocket handshake its handler already took (Deno): the handshake's
 * shape (RFC 6455 §4.1: a GET with `Upgrade: websocket`, `Connection: Upgrade` and a
 * `Sec-WebSocket-Key`), and a request the runtime closed — Deno closes the one it upgraded, and
 * reading its body then throws. The shape alone is the client's word: sent to any slow route,
 * it dodged the deadline (two reviews).
 */
export function _upgradedWebSocket(request: Request): boolean {
  if (request.method !== "GET") return false;
  const headers = request.headers;
  if (headers.get("upgrade")?.toLowerCase() !== "websocket" || !/(?:^|,)\s*upgrade\s*(?:,|$)/i.test(headers.get("connection") ?? "") || !headers.has("sec-websocket-key")) return false;
  try {
    void request.body;
    return false;
  } catch {
    return true;
  }
}

/**
 * What the view reads and sets: the guard's internal admission (admission.ts) has this
 * shape. Declared here so that the view and the admission do not import each other.
 */
export interface _ViewSource {
  readonly info: ServeInfo | undefined;
  readonly bodyLimit: number | undefined;
  setBodyLimit(bytes: number | undefined): void;
  readonly timeoutMs: number;
  setTimeoutMs(ms: number): void;
  readonly signal: AbortSignal;
  readonly shutdownSignal: AbortSignal;
  readonly startedAt: number;
  readonly key: string | undefined;
  /** The client key: the keyed gates', else the guard's key function's, computed on first read. */
  clientKey(): string | undefined;
  onAbandon(cleanup: (reason: unknown) => void | Promise<void>): () => void;
  /** Emits a route-level refusal (or fault) through the guard's sinks. */
  report(event: HygieneEvent): void;
}

/**
 * Marks a request context the guard made: a registry symbol, so another copy of the package
 * tells it too. Hono's own adapters hand the app an env with a `context` of theirs (Netlify's,
 * Lambda@Edge's): read as the guard's, `hygiene()` stepped aside and the route pieces set the
 * platform's object (a review).
 */
export const _CONTEXT_BRAND: unique symbol = Symbol.for("serve-hygiene.request-context") as never;

/** Whether `x` is a request context the guard made (any copy of the package). Internal. */
export function _isRequestContext(x: unknown): x is RequestContext {
  return typeof x === "object" && x !== null && (x as { [_CONTEXT_BRAND]?: unknown })[_CONTEXT_BRAND] === true;
}

/**
 * The one object a handler gets for its request: both its {@linkcode GuardedInfo} (`peer`,
 * `context`) and its {@linkcode RequestContext} (`context` is itself). A view over the
 * guard's internal admission, reached through a private field: user code can read and set
 * only what RequestContext names (the setters validate), and a property it writes on the
 * view is its own, never the guard's. Not exported from the package.
 */
export class _RequestView implements RequestContext, GuardedInfo, _Reporting {
  readonly #a: _ViewSource;

  /** The guard's mark (see {@linkcode _isRequestContext}). */
  get [_CONTEXT_BRAND](): true {
    return true;
  }

  constructor(admission: _ViewSource) {
    this.#a = admission;
  }

  /** The transport peer, read from the adapter's info only when asked. */
  get peer(): PeerAddress | undefined {
    return this.#a.info?.peer;
  }

  get context(): RequestContext {
    return this;
  }

  get bodyLimitBytes(): number | undefined {
    return this.#a.bodyLimit;
  }

  set bodyLimitBytes(bytes: number | undefined) {
    this.#a.setBodyLimit(bytes);
  }

  get timeoutMs(): number {
    return this.#a.timeoutMs;
  }

  set timeoutMs(ms: number) {
    this.#a.setTimeoutMs(ms);
  }

  get signal(): AbortSignal {
    return this.#a.signal;
  }

  get shutdownSignal(): AbortSignal {
    return this.#a.shutdownSignal;
  }

  get startedAt(): number {
    return this.#a.startedAt;
  }

  get key(): string | undefined {
    return this.#a.clientKey();
  }

  onAbandon(cleanup: (reason: unknown) => void | Promise<void>): () => void {
    return this.#a.onAbandon(cleanup);
  }

  /** Route-level refusals reach the guard's sinks (route_report.ts); not part of RequestContext. */
  [_REPORT](event: HygieneEvent): void {
    this.#a.report(event);
  }

  /** The key for route-level limits, `false` when the guard's key function failed (route_report.ts). */
  [_ROUTE_KEY](): string | false {
    return this.#a.clientKey() ?? false;
  }
}
