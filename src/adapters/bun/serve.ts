import { _closing, type _KeyList, _positiveIntOrInfinity, _safeLogger, denyResponse, fallbackResponse, type GuardedHandler, type Listen, type Logger, peerAddress, type PeerAddress, type ServeHandle, type ServeOptions, serveWith } from "../../core/mod.ts";
import { _bun } from "./bun_api.ts";
import { createBunHost, type BunHostOptions } from "./host.ts";

/** Options of the Bun adapter's {@linkcode serve}. */
export interface BunServeOptions extends ServeOptions, BunHostOptions {
  /**
   * Bun's own body ceiling (413 + close before the handler when Content-Length is over it).
   * At least the largest cap the guard gives (refused below it): the guard enforces the real
   * caps, and past a cap by less than 1 MiB Bun may answer with its own empty 413 instead.
   * @default the largest configured cap (bodyLimitBytes or a routeBodyLimits entry) + 1 MiB; 128 MiB when some request has no cap
   */
  maxRequestBodySize?: number | undefined;
  /**
   * Bun's idle timer in seconds (1–255): a connection with nothing to do (keep-alive between
   * requests, a request body the guard no longer waits for) is closed after it. Off while the
   * guard works on a request; back on once the guard has answered, so a response stream
   * silent for longer than this is cut (send a heartbeat more often). Bun's timer runs in steps
   * of about 4 s: at 4 or less a stream is cut after ~4 s however often it writes.
   * @default 10
   */
  idleTimeoutSeconds?: number | undefined;
  /**
   * Bun.serve's `reusePort`: several processes listen on one port and Linux spreads the
   * connections among them (each process drains on its own signal). @default false
   */
  reusePort?: boolean | undefined;
}

const BUN_DEFAULT_MAX_BODY = 128 * 1024 * 1024;
/** How often a drain looks whether a request is still in progress. */
const DRAIN_POLL_MS = 50;
const BUN_DEFAULT_IDLE_TIMEOUT_S = 10;

function _idleTimeoutSeconds(value: number | undefined): number {
  if (value === undefined) return BUN_DEFAULT_IDLE_TIMEOUT_S;
  if (!Number.isInteger(value) || value < 1 || value > 255) {
    throw new RangeError(`Cannot serve on Bun as "idleTimeoutSeconds" must be an integer from 1 to 255: current value is ${String(value)}`);
  }
  return value;
}

// Bun fails a body read past its ceiling before handing over the chunk that passed it; with
// this much slack (more than one socket read, 512 KiB) the guard counts past its cap first and
// answers with its own 413 and deny event.
const BUN_CEILING_SLACK = 1024 * 1024;

/**
 * Bun's own body ceiling for the guard's caps: the largest cap any request gets, plus slack;
 * where some request has no cap, 128 MiB (Bun's default) — but never below a route's own
 * finite cap, which Bun would otherwise refuse under it with its own empty 413.
 */
export function _maxRequestBodySize(config: _Caps): number {
  if (config.bodyLimitCeiling !== undefined) return config.bodyLimitCeiling + BUN_CEILING_SLACK;
  return Math.max(BUN_DEFAULT_MAX_BODY, _largestCap(config) + BUN_CEILING_SLACK);
}

type _Caps = { bodyLimitCeiling: number | undefined; bodyLimitBytes: number | undefined; routeBodyLimits: readonly { bytes: number }[] };

/** The largest finite body cap any request can get (0 when none is set). */
function _largestCap(config: _Caps): number {
  let largest = 0;
  for (const bytes of [config.bodyLimitBytes ?? 0, ...config.routeBodyLimits.map((r) => r.bytes)]) {
    if (bytes !== Infinity && bytes > largest) largest = bytes;
  }
  return largest;
}

/**
 * A `maxRequestBodySize` of the user's own: a positive integer or Infinity, and not below a cap
 * the guard gives (Bun refused what the cap allows with its own empty 413, no deny event, and
 * took -5, 0.5 and NaN, refusing every body: a review).
 */
function _checkMaxBody(value: unknown, config: _Caps): void {
  const given = _positiveIntOrInfinity("serve on Bun", "maxRequestBodySize", value);
  const largest = _largestCap(config);
  if (given < largest) {
    throw new RangeError(`Cannot serve on Bun as "maxRequestBodySize" must be at least the largest body cap, ${largest} bytes (Bun refuses a body over it with its own empty 413 before the guard sees it): current value is ${given}`);
  }
}

// requestIP is a call into Bun's server per request: made only if a keyed gate or the
// handler reads the peer, and at most once.
interface _RequestIP {
  requestIP(request: Request): { address: string; port: number; family: string } | null;
}

class _PeerInfo {
  #srv: _RequestIP | undefined;
  #request: Request;
  #peer: PeerAddress | undefined;

  constructor(srv: _RequestIP, request: Request) {
    this.#srv = srv;
    this.#request = request;
  }

  get peer(): PeerAddress | undefined {
    if (this.#srv !== undefined) {
      const ip = this.#srv.requestIP(this.#request);
      this.#srv = undefined;
      this.#peer = ip === null ? undefined : peerAddress(ip.address, ip.port, ip.family);
    }
    return this.#peer;
  }

  /**
   * True once the peer was read and Bun had none: on a TCP listener, a client that reset its
   * connection right after its request. Until then the request's signal says.
   */
  get clientGone(): true | undefined {
    return this.#srv === undefined && this.#peer === undefined ? true : undefined;
  }
}

/** The Bun.serve binding: listens with the guarded fetch and exposes the core's Server. */
export function listenBun(options: { maxRequestBodySize?: number | undefined; idleTimeoutSeconds?: number | undefined; log: Logger }): Listen {
  const idleTimeout = _idleTimeoutSeconds(options.idleTimeoutSeconds);
  const restore = (srv: { timeout(request: Request, seconds: number): void }, request: Request) => {
    try {
      srv.timeout(request, idleTimeout);
    } catch {
      // the connection is already gone
    }
  };
  const listen = (fetch: Parameters<Listen>[0], { port, hostname, config, stopping, reusePort }: Parameters<Listen>[1]) => {
    const server = _bun().serve({
      port,
      hostname,
      idleTimeout,
      reusePort: reusePort === true,
      maxRequestBodySize: options.maxRequestBodySize ?? _maxRequestBodySize(config),
      fetch(request, srv) {
        // Bun leaves the URL relative ("/path") for a request with no Host (HTTP/1.0) or an
        // invalid one, and gives a CONNECT its authority-form ("host:443/path"): answered
        // 400 + close, as node answers (or closes) such requests. Handed on, the exempt paths
        // were read from the wrong place (reviews: "/abc/api/healthz" and "a:1/u/users/healthz"
        // skipped the process-wide gates as "/healthz"), `new URL(request.url)` threw in every
        // route, and a handler's 2xx to a CONNECT would tell the client a tunnel is open.
        if (!request.url.startsWith("http")) return denyResponse(400, { close: true });
        let answered = fetch(request, new _PeerInfo(srv, request));
        // From the stop signal on, every answer closes its connection (_closing).
        if (stopping?.aborted === true) answered = _closing(answered);
        // Answered synchronously (a refusal, a handler that returned its Response): no timer
        // can fire while it ran, so Bun's idle timer is left as it is.
        if (!(answered instanceof Promise)) return answered;
        // Bun's idle timer would cut a request the guard admitted (RUNTIMES.md): the guard's
        // own deadline bounds it instead. Once the guard has answered, the timer is back:
        // left off, a client trickling a body nobody reads (or an idle keep-alive) would hold
        // its connection for ever.
        srv.timeout(request, 0);
        const again = () => restore(srv, request);
        answered.then(again, again);
        return answered;
      },
      error(error) {
        return fallbackResponse(error, options.log);
      },
    });
    return {
      // The address bound, as Node and Deno report it (Bun's hostname is the one given: "localhost",
      // where the others say 127.0.0.1; a review).
      address: { hostname: server.address?.address ?? server.hostname ?? hostname, port: server.port ?? port },
      // Bun refuses new connections at once, closes idle keep-alive, and resolves when in-flight
      // is done — and when every other connection has closed too: one that sent half a request
      // head (no request yet, so nothing can end it) would hold the drain to its window. Once
      // no request is in progress (a response still streaming counts), what is left is cut.
      stopAccepting: () =>
        new Promise<void>((done) => {
          const poll = setInterval(() => {
            if (server.pendingRequests > 0) return;
            clearInterval(poll);
            void server.stop(true).then(done, done);
          }, DRAIN_POLL_MS);
          server.stop().then(() => (clearInterval(poll), done()), () => (clearInterval(poll), done()));
        }),
      // One turn later: answers the guard just gave (a forced drain's 503s) go out first.
      closeAll: () => new Promise<void>((done) => setTimeout(() => done(server.stop(true)), 0)),
      // A Bun server never ends on its own; it ends through the drain.
      closed: new Promise<void>(() => {}),
      peerAddress(request: Request) {
        const ip = server.requestIP(request);
        return ip === null ? undefined : peerAddress(ip.address, ip.port, ip.family);
      },
    };
  };
  const check = (config: _Caps) => {
    if (options.maxRequestBodySize !== undefined) _checkMaxBody(options.maxRequestBodySize, config);
  };
  return Object.assign(listen, { takesReusePort: true, optionKeys: BUN_KEYS, check });
}

/** The Bun adapter's own options (serve() checks every key given: see ServeOptions). */
const BUN_KEYS = Object.keys({ maxRequestBodySize: true, idleTimeoutSeconds: true, reusePort: true } satisfies _KeyList<Omit<BunServeOptions, keyof ServeOptions>>);

/**
 * Serves a Web fetch handler on Bun.serve behind the guard, with SIGTERM/Ctrl-C wired to the
 * two-phase drain.
 *
 * @example
 * ```ts
 * import { serve } from "serve-hygiene/bun";
 * const handle = await serve(() => new Response("hello"), { port: 0 });
 * console.assert((await fetch(`http://127.0.0.1:${handle.address.port}/`)).status === 200);
 * await handle.shutdown("example done");
 * ```
 */
export async function serve(handler: GuardedHandler, options: BunServeOptions = {}): Promise<ServeHandle> {
  // async: a bad option rejects the promise it returns, as every other failure does (a throw
  // escaped `serve(…).catch(…)`: a review).
  const host = createBunHost(options);
  const listen = listenBun({ maxRequestBodySize: options.maxRequestBodySize, idleTimeoutSeconds: options.idleTimeoutSeconds, log: _safeLogger(options.log ?? host.log!) });
  return serveWith(host, listen, handler, options);
}
