import type { MiddlewareHandler } from "hono";
import { _carried, _guardedFetch, _upgradedWebSocket, _safeLogger, consoleLogger, type AbortSignalLike, createGuard, type Guard, type GuardOptions, type Host, type PeerAddress } from "../core/mod.ts";
import { _clientGoneOf, _clientLeftOf, CONTEXT_KEY, hygieneContext, peerOf, type _WithContext } from "./context.ts";

/** Options of {@linkcode hygiene}: the guard's options. */
export type HygieneOptions = GuardOptions;

/** The app-level middleware, with the guard it runs (for metrics, readiness and the drain). */
export interface HygieneMiddleware extends MiddlewareHandler {
  readonly guard: Guard;
}

// What the guarded handler needs of the request's Hono chain; the peer (and whether the client
// left) is read only when asked.
class _HonoInfo {
  readonly c: Parameters<MiddlewareHandler>[0];
  readonly next: Parameters<MiddlewareHandler>[1];
  constructor(c: Parameters<MiddlewareHandler>[0], next: Parameters<MiddlewareHandler>[1]) {
    this.c = c;
    this.next = next;
  }
  get peer(): PeerAddress | undefined {
    return peerOf(this.c);
  }
  get clientGone(): boolean | undefined {
    return _clientGoneOf(this.c);
  }
  get clientLeft(): AbortSignalLike | undefined {
    return _clientLeftOf(this.c);
  }
  /** On Deno.serve (its env is the handler info), a WebSocket handshake its route upgraded takes only its 101. */
  upgrading(request: Request): boolean {
    const env = this.c.env as { remoteAddr?: unknown; completed?: unknown } | null | undefined;
    return typeof env?.remoteAddr === "object" && env.completed instanceof Promise && _upgradedWebSocket(request);
  }
}

/**
 * The env to give the chain once `capped` replaced `original` in `c.req.raw`. Bun's server
 * (`Bun.serve({ fetch: app.fetch })`: the env is the server) answers `requestIP`, `timeout` and
 * `upgrade` only for a Request it made: its methods get the original back for the capped one,
 * so the peer reads as before (peerOf, route-level limits, Hono's own getConnInfo). That env
 * is a view of the server, not the server itself (`c.env === server` is false for such a
 * request); each of its methods is one function for the request. Any other env is given as it is.
 */
function _envFor(env: unknown, original: Request, capped: Request): unknown {
  if (typeof (env as { requestIP?: unknown } | null | undefined)?.requestIP !== "function") return env;
  const methods = new Map<PropertyKey, unknown>();
  return new Proxy(env as object, {
    get(target, key) {
      const value: unknown = Reflect.get(target, key, target);
      if (typeof value !== "function") return value;
      let method = methods.get(key);
      if (method === undefined) {
        method = (...args: unknown[]) => (value as (...a: unknown[]) => unknown).apply(target, args.map((a) => (a === capped ? original : a)));
        methods.set(key, method);
      }
      return method;
    },
  });
}

type _Context = Parameters<MiddlewareHandler>[0];
type _ResAccessor = { get(this: _Context): Response; set(this: _Context, res: Response | undefined): void };
let _accessor: _ResAccessor | undefined;

// Hono's own `res` accessor (on Context's prototype), found once.
function _resOf(c: _Context): _ResAccessor {
  if (_accessor !== undefined) return _accessor;
  for (let o: object | null = Object.getPrototypeOf(c); o !== null; o = Object.getPrototypeOf(o)) {
    const d = Object.getOwnPropertyDescriptor(o, "res");
    if (d?.get !== undefined && d.set !== undefined) return (_accessor = d as _ResAccessor);
  }
  throw new TypeError("Cannot find Hono's Context.res accessor");
}

/**
 * Once the guard put its own answer in place, it stays: a later assignment is the chain's late
 * value, kept aside for the guard, which cancels its body (as `serve()` cancels a late answer).
 * After a 408 a route that follows its signal rejects, and Hono's compose puts its error
 * handler's 500 in place over the 408 (a finalized context's value is replaced for an error):
 * the client got a 500 whose body Hono's copy had spent, or a TypeError on Deno (a review).
 */
function _hold(c: _Context, own: _ResAccessor): void {
  _held.set(c, (_nothingLate ??= new Response(null)));
  Object.defineProperty(c, "res", {
    configurable: true,
    get: () => own.get.call(c),
    set: (late: Response | undefined) => {
      if (!(late instanceof Response)) return;
      const current = own.get.call(c);
      if (late === current) return;
      // The answer in place was read to make this one: an outer middleware's replacement
      // (compress() pipes it into its gzip stream), which goes out — the one in place is
      // spent (kept, the client got a 500 and a stack was logged a request: a review).
      if (current.bodyUsed || current.body?.locked === true) {
        own.set.call(c, undefined);
        own.set.call(c, late);
      } else _held.set(c, late);
    },
  });
}

// The chain's late value of each context whose answer the guard holds (what Hono's compose
// tried to put in place after it): the guard cancels its body (handler_run's `late`).
const _held = new WeakMap<_Context, Response>();
// Nothing was put in place (Hono drops a finalized context's late return value unseen): a
// body-less stand-in, so the guard neither cancels its own answer, which is being sent, nor
// reports a missing Response. Made on first use: built at import, it made Node load its fetch
// implementation (undici) while the module loaded (~15 ms of a cold start: a review).
let _nothingLate: Response | undefined;

/** What the chain answered: Hono's context's response, or once the guard holds its own, the chain's late value. */
function _readChain(c: _Context): Response {
  return _held.get(c) ?? c.res;
}


/**
 * The whole request path as app-level Hono middleware, for apps served by something other
 * than serve-hygiene's adapters (which apply the guard themselves). The rest of the chain
 * runs as the guarded handler: it sees the body-capped request, and route-level pieces
 * (`bodyLimit`, `timeout`, `rateLimit`, `inFlightCap`) adjust the same context. A declared
 * length over the cap is refused before any route runs: a route whose `bodyLimit()` raises
 * the cap declares the raise in the options' `routeBodyLimits`.
 * Give the probe and metrics routes as `exempt` paths so the process-wide gates never refuse them.
 *
 * @example
 * ```ts
 * import { Hono } from "hono";
 * import { hygiene } from "serve-hygiene/hono";
 * const app = new Hono();
 * app.use(hygiene({ concurrencyLimit: 64, bodyLimitBytes: 1024, exempt: ["/healthz", "/metrics"] }));
 * app.get("/", (c) => c.text("hello"));
 * app.get("/healthz", (c) => c.text("ok"));
 * const res = await app.request("/");
 * console.assert(res.status === 200);
 * console.assert((await app.request("/healthz")).status === 200);
 * ```
 */
export function hygiene(options?: HygieneOptions, host?: Host): HygieneMiddleware {
  const guard = createGuard(options, host);
  // Only a refusal or a changed answer replaces the response: Hono's res setter rebuilds the
  // response it is given, which would turn the app's own answer into a stream-bodied copy.
  // It is cleared first, so Hono's setter copies no header: the answer keeps its own head, and
  // takes of the one it replaces only what is about neither the representation nor caching nor
  // the connection (earlier middleware's CORS and security headers). Copied by Hono, a route's
  // Cache-Control made a 408 cacheable, its Set-Cookie went out on it, and a compress()'s
  // Content-Encoding labelled a plain-text 413 gzip (reviews).
  const answer = (c: Parameters<MiddlewareHandler>[0], res: Response, early = false) => {
    const prev = c.res;
    if (res === prev) return;
    const own = _resOf(c);
    own.set.call(c, undefined);
    // A route's value that is no Response (a string: `c.text` forgotten) is in c.res too: there
    // is nothing of it to carry (read as one, the throw ended the process: a review).
    own.set.call(c, prev instanceof Response ? _carried(prev, res) : res);
    // Held only while the chain may still answer after it: an answer given once the chain
    // settled is the outer middleware's to replace, as any response is (compress(), etag()).
    if (early) _hold(c, own);
  };
  // Built once: the request's Hono context and `next` travel in the info it is called with.
  // The chain answers in its context, not in `next()`'s value: the guard reads the answer
  // there and puts its own back there (a delivery), so a request costs no promise beyond
  // Hono's own and the guard's.
  const guarded = _guardedFetch(
    guard,
    (request, view, info) => {
      const { c, next } = info as _HonoInfo;
      // The guarded request carries the capped body stream (when one applies); Hono reads c.req.raw.
      if (request !== c.req.raw) {
        c.env = _envFor(c.env, c.req.raw, request);
        c.req.raw = request;
      }
      (c as _WithContext)[CONTEXT_KEY] = view.context;
      return next() as Promise<never>;
    },
    true,
    {
      read: (info) => _readChain((info as _HonoInfo).c),
      deliver: (res, info, early) => answer((info as _HonoInfo).c, res, early),
    },
  );
  // A request another guard already holds (an outer hygiene(), or serve()'s guard: the app
  // served by serve-hygiene's adapters) is that guard's: guarded twice, the inner's early
  // answer reached the client as an empty 200, and the outer gave its permit back while the
  // route still ran (a review). This one steps aside, and says so once.
  const log = _safeLogger(options?.log ?? host?.log ?? consoleLogger);
  let nested = false;
  const stepAside = (next: Parameters<MiddlewareHandler>[1]) => {
    if (!nested) {
      nested = true;
      log({
        level: "warn",
        msg: "hygiene() on a request another guard already holds (an outer hygiene(), or serve-hygiene's serve()) steps aside: the outer guard's options apply; set a route's own with timeout(), bodyLimit(), rateLimit(), inFlightCap()",
      });
    }
    return next();
  };
  const middleware = function hygiene(c: Parameters<MiddlewareHandler>[0], next: Parameters<MiddlewareHandler>[1]): Promise<void> | Response | undefined {
    if (hygieneContext(c) !== undefined) return stepAside(next);
    const answered = guarded(c.req.raw, new _HonoInfo(c, next));
    if (answered instanceof Response) {
      answer(c, answered);
      // Returned, not only set: on a path no route matches this middleware is Hono's one
      // handler, and Hono then answers a synchronous undefined with its not-found handler.
      return c.res;
    }
    return answered;
  } as HygieneMiddleware;
  Object.defineProperty(middleware, "guard", { value: guard });
  return middleware;
}
