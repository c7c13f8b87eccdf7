// Which body cap applies to a request, known before its handler runs: the service-wide cap,
// or the cap of the first declared route it matches. A route cap set only inside the handler
// (a Hono `bodyLimit()`) would come too late for a handler that never reads the body.
import { type _KeyList, _onlyKnown, _positiveIntOrInfinity, _show } from "../_validate.ts";
import type { DeclaredLength } from "./body_limit.ts";
import { _ambiguousPath, _parsedPath, _pathAt, _pathStart } from "./_url_path.ts";

/** One route's body cap, declared in the guard's options so it applies before the handler runs. */
export interface RouteBodyLimit {
  /**
   * The request path, matched as Hono's router matches it: against the URL's pathname decoded
   * as Hono decodes it (`/%75pload` is `/upload`; `%25` and reserved escapes such as `%2F` stay
   * encoded), exact (`/upload`), or every path under a prefix when it ends in `*` (`/files/*`,
   * which also matches `/files` itself, as Hono's does). Case and a trailing slash count.
   */
  readonly path: string;
  /** Only requests with this method (case-insensitive). @default every method */
  readonly method?: string | undefined;
  /** The cap for matching requests, in bytes: a positive integer, or `Infinity` for none. */
  readonly bytes: number;
}

/**
 * Up to this many unread body bytes the runtime may read and discard to keep the connection;
 * a larger or unknown remainder closes the connection instead (RFC 9112 §9.6).
 */
export const UNREAD_BODY_KEEP_BYTES = 64 * 1024;

/**
 * Whether a connection should close rather than read the unread rest of a request body:
 * true unless the declared length is known and at most {@linkcode UNREAD_BODY_KEEP_BYTES}.
 *
 * @example
 * ```ts
 * import { closesOnUnreadBody } from "./body_caps.ts";
 * console.assert(closesOnUnreadBody({ kind: "length", bytes: 100 }) === false);
 * console.assert(closesOnUnreadBody({ kind: "unknown" }) === true);
 * ```
 */
export function closesOnUnreadBody(declared: DeclaredLength | undefined): boolean {
  return declared?.kind !== "length" || declared.bytes > UNREAD_BODY_KEEP_BYTES;
}

/** Every key of a {@linkcode RouteBodyLimit}: any other is refused at startup. */
const ROUTE_KEYS: _KeyList<RouteBodyLimit> = { path: true, method: true, bytes: true };

/**
 * Validates a `routeBodyLimits` list: each entry a plain object with a `path` starting with
 * `/`, an optional non-empty `method` (upper-cased here) and `bytes` a positive integer or
 * `Infinity`. Returns a frozen copy.
 */
export function _resolveRouteBodyLimits(what: string, value: unknown): readonly RouteBodyLimit[] {
  if (value === undefined) return Object.freeze([]);
  if (!Array.isArray(value)) throw new TypeError(`Cannot ${what} as "routeBodyLimits" must be an array: current value is ${_show(value)}`);
  return Object.freeze(value.map((entry: unknown, i): RouteBodyLimit => {
    const field = `routeBodyLimits[${i}]`;
    if (typeof entry !== "object" || entry === null || Array.isArray(entry)) {
      throw new TypeError(`Cannot ${what} as "${field}" must be an object: current value is ${_show(entry)}`);
    }
    _onlyKnown(what, entry, ROUTE_KEYS, field);
    const { path, method, bytes } = entry as Record<string, unknown>;
    if (typeof path !== "string" || !path.startsWith("/")) {
      throw new TypeError(`Cannot ${what} as "${field}.path" must be a path starting with "/": current value is ${_show(path)}`);
    }
    // Matched literally: a router's pattern (Hono's "/users/:id", "/api/*/note") matched no
    // request, and its cap silently applied to none (a review).
    if (path.includes("/:") || path.slice(0, -1).includes("*")) {
      throw new TypeError(`Cannot ${what} as "${field}.path" must be a literal path, exact or a prefix ending in "*" (no ":param" segment, no "*" before the end): current value is ${_show(path)}`);
    }
    if (method !== undefined && (typeof method !== "string" || method === "")) {
      throw new TypeError(`Cannot ${what} as "${field}.method" must be a method name: current value is ${_show(method)}`);
    }
    _positiveIntOrInfinity(what, `${field}.bytes`, bytes);
    const route = { path, bytes: bytes as number };
    return Object.freeze(method === undefined ? route : { ...route, method: method.toUpperCase() });
  }));
}

/**
 * The largest cap any request can get (the service cap or the largest route cap), or
 * undefined when some request has none: what a runtime's own body ceiling may follow.
 */
export function _bodyLimitCeiling(service: number | undefined, routes: readonly RouteBodyLimit[]): number | undefined {
  if (service === undefined) return undefined;
  const largest = routes.reduce((max, r) => Math.max(max, r.bytes), service);
  return largest === Infinity ? undefined : largest;
}

/**
 * A path decoded as Hono's router decodes it before matching (hono/utils/url.ts, getPath):
 * `decodeURI` with `%25` kept, each malformed escape left as it is. A route's cap must cover
 * every request the route's handler gets: matched on the encoded path, `POST /%6cogin` reached
 * a `/login` handler with the service cap instead of the route's lower one (a review).
 */
function _decodedPath(path: string): string {
  if (!path.includes("%")) return path;
  const kept = path.includes("%25") ? path.replace(/%25/g, "%2525") : path;
  try {
    return decodeURI(kept);
  } catch {
    return kept.replace(/(?:%[0-9A-Fa-f]{2})+/g, (run) => {
      try {
        return decodeURI(run);
      } catch {
        return run;
      }
    });
  }
}

/**
 * The cap that applies to `request`: the first matching route's, else the service cap. Where a
 * URL parser reads another path than the guard (_url_path.ts: Deno's raw targets), the smaller of
 * the two caps: a router of either kind then gets no more than its route allows.
 */
export function _capFor(request: Request, service: number | undefined, routes: readonly RouteBodyLimit[]): number | undefined {
  if (routes.length === 0) return service;
  const url = request.url;
  // A URL neither absolute nor a path (a CONNECT's "host:443/path") matches no route: "/".
  const start = _pathStart(url);
  const path = start < 0 ? "/" : _decodedPath(_pathAt(url, start));
  const cap = _routeCap(path, request.method, service, routes);
  if (start <= 0 || !_ambiguousPath(url, start, path)) return cap;
  const other = _routeCap(_decodedPath(_parsedPath(url)), request.method, service, routes);
  return cap === undefined ? other : other === undefined ? cap : Math.min(cap, other);
}

function _routeCap(path: string, method: string, service: number | undefined, routes: readonly RouteBodyLimit[]): number | undefined {
  // Entries are upper-cased; a method as sent may not be (Deno hands "patch" over: a PATCH
  // route's lowered cap missed it, a review).
  let upper: string | undefined;
  for (const route of routes) {
    if (route.method !== undefined && route.method !== method && route.method !== (upper ??= method.toUpperCase())) continue;
    const p = route.path;
    if (!p.endsWith("*")) {
      if (path === p) return route.bytes;
    } else if (path.startsWith(p.slice(0, -1)) || (p.endsWith("/*") && path === p.slice(0, -2))) return route.bytes;
  }
  return service;
}

/**
 * Whether a body left unread should close the connection: a declared length over
 * {@linkcode UNREAD_BODY_KEEP_BYTES}, a malformed one (a length past 2^53 − 1 that the
 * runtime's parser took: its end is not known), or a chunked one. No length and no
 * Transfer-Encoding means no body at all (HTTP/1.1).
 */
export function _unreadCloses(request: Request, declared: DeclaredLength | undefined, hasBody: boolean): boolean {
  if (declared?.kind === "length") return declared.bytes > UNREAD_BODY_KEEP_BYTES;
  // The framing gate's 400 to it was kept open on Deno, which read the upload at the
  // client's pace, a drain's window long (a framing review).
  if (declared?.kind === "malformed") return true;
  return hasBody && request.headers.has("transfer-encoding");
}

/** `res` with `Connection: close`, as a new Response (the handler's own may be shared or immutable). */
export function _withClose(res: Response): Response {
  // A protocol switch (Deno's WebSocket 101: `Connection: Upgrade`) is not an answer to close.
  if (res.status === 101 || res.headers.get("connection") === "close") return res;
  // Marked in place: a copy loses what the runtime keeps off the headers — Bun's implied
  // Content-Type of a string body (a review: text/plain became application/octet-stream), which
  // even reading `res.body` loses there. Not a null-body status (204, 205, 304): such an answer
  // may be one object shared between requests, and has no body to lose (copied). Immutable
  // headers (an upstream's Response passed through) throw: copied then.
  if (res.status !== 204 && res.status !== 205 && res.status !== 304) {
    try {
      res.headers.set("connection", "close");
      return res;
    } catch {
      // copied below
    }
  }
  const headers = new Headers(res.headers);
  headers.set("connection", "close");
  try {
    return new Response(res.body, { status: res.status, statusText: res.statusText, headers });
  } catch {
    return res; // a status a Response cannot be built with (101): left as it is
  }
}

/**
 * An answer, or its promise, marked `Connection: close` ({@linkcode _withClose}): from the stop
 * signal on (its pre-stop delay too) every answer an adapter sends closes its connection, so a
 * proxy's pooled keep-alive connections are retired through clean answers rather than closed
 * under a request already on its way when the server stops accepting (reset: a POST is not
 * retried).
 */
export function _closing(answered: Response | Promise<Response>): Response | Promise<Response> {
  return answered instanceof Promise ? answered.then(_withClose) : _withClose(answered);
}
