import { type GuardedHandler, type Listen, type Logger, type PeerAddress, type ServeHandle, type ServeOptions, serveWith } from "../../core/mod.ts";
import { createBunHost, type BunHostOptions } from "./host.ts";

/** Options of the Bun adapter's {@linkcode serve}. */
export interface BunServeOptions extends ServeOptions, BunHostOptions {
  /**
   * Bun's own body ceiling (413 + close before the handler when Content-Length is over it).
   * Keep it above the largest route cap: the guard enforces the real caps.
   * @default the largest configured cap (bodyLimitBytes or a routeBodyLimits entry) + 1 MiB; 128 MiB when some request has no cap
   */
  maxRequestBodySize?: number;
}

const BUN_DEFAULT_MAX_BODY = 128 * 1024 * 1024;
// Bun fails a body read past its ceiling before handing over the chunk that passed it; with
// this much slack (more than one socket read, 512 KiB) the guard counts past its cap first and
// answers with its own 413 and deny event.
const BUN_CEILING_SLACK = 1024 * 1024;

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
      this.#peer = ip === null ? undefined : { address: ip.address, port: ip.port, family: ip.family === "IPv6" ? "IPv6" : "IPv4" };
    }
    return this.#peer;
  }
}

/** The Bun.serve binding: listens with the guarded fetch and exposes the core's Server. */
export function listenBun(options: { maxRequestBodySize?: number; log: Logger }): Listen {
  return (fetch, { port, hostname, config }) => {
    const ceiling = config.bodyLimitCeiling;
    const server = Bun.serve({
      port,
      hostname,
      maxRequestBodySize: options.maxRequestBodySize ?? (ceiling === undefined ? BUN_DEFAULT_MAX_BODY : ceiling + BUN_CEILING_SLACK),
      fetch(request, srv) {
        // Bun's idle timer would cut a request the guard admitted (RUNTIMES.md): the guard's
        // own deadline bounds it instead.
        srv.timeout(request, 0);
        return fetch(request, new _PeerInfo(srv, request));
      },
      error(error) {
        options.log({ level: "error", msg: "guarded handler failed", error });
        return new Response("Internal Server Error", { status: 500, headers: { "content-type": "text/plain" } });
      },
    });
    return {
      address: { hostname: server.hostname ?? hostname, port: server.port ?? port },
      // Bun refuses new connections at once, closes idle keep-alive, and resolves when in-flight is done.
      stopAccepting: () => server.stop(),
      closeAll: () => server.stop(true),
      // A Bun server never ends on its own; it ends through the drain.
      closed: new Promise<void>(() => {}),
      peerAddress(request) {
        const ip = server.requestIP(request);
        return ip === null ? undefined : { address: ip.address, port: ip.port };
      },
    };
  };
}

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
export function serve(handler: GuardedHandler, options: BunServeOptions = {}): Promise<ServeHandle> {
  const host = createBunHost(options);
  return serveWith(host, listenBun({ maxRequestBodySize: options.maxRequestBodySize, log: options.log ?? host.log! }), handler, options);
}
