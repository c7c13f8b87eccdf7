import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { getRequestListener } from "@hono/node-server";
import { closesOnUnreadBody, type DeclaredLength, type Listen, type Logger, type Server } from "../../core/mod.ts";
import { peerOf } from "./peer.ts";

/** Node-only transport settings of {@linkcode listenNode}. */
export interface NodeListenOptions {
  /**
   * Headers must arrive within this (slowloris is cut with 408 by node itself).
   * @default min(10000, requestTimeoutMs)
   */
  headersTimeoutMs?: number;
  /** Idle keep-alive sockets close after this. @default 5000 */
  keepAliveTimeoutMs?: number;
  log: Logger;
}

// A client over the connection cap gets an HTTP answer it can act on, not a reset.
const OVER_CAP = "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nRetry-After: 1\r\n" +
  "Content-Type: text/plain\r\nContent-Length: 19\r\n\r\nService Unavailable";

/** Whether the head declares a body (any method: a GET may carry one too). */
function _declaresBody(req: IncomingMessage): boolean {
  return req.headers["content-length"] !== undefined || req.headers["transfer-encoding"] !== undefined;
}

/** The declared body length as node's parser (which refuses malformed lengths) read it. */
function _declared(req: IncomingMessage): DeclaredLength {
  const length = req.headers["content-length"];
  return length === undefined || req.headers["transfer-encoding"] !== undefined ? { kind: "unknown" } : { kind: "length", bytes: Number(length) };
}

/** The node:http binding: listens with the guarded fetch and exposes the core's Server. */
export function listenNode(options: NodeListenOptions): Listen {
  return (fetch, { port, hostname, config }) => {
    const requestTimeout = config.requestTimeoutMs === Infinity ? 300_000 : config.requestTimeoutMs;
    let draining = false;
    let open = 0;
    // @hono/node-server translates IncomingMessage/ServerResponse to Request/Response: it
    // measured 4x faster than a translation through undici's own Request/Response (its
    // lightweight objects build the real ones only when touched), and keeps request and
    // response bodies streaming with backpressure. Like its serve(), it installs its
    // compatible Request/Response as globals.
    const translate = getRequestListener((request, env) => {
      const incoming = env.incoming as IncomingMessage;
      return fetch(request, { get peer() { return peerOf(incoming); }, declaresBody: _declaresBody(incoming) });
    }, {
      errorHandler: (error) => {
        options.log({ level: "error", msg: "guarded handler failed", error });
        return new Response("Internal Server Error", { status: 500, headers: { "content-type": "text/plain" } });
      },
    });
    const http: HttpServer = createServer({
      requestTimeout,
      headersTimeout: Math.min(options.headersTimeoutMs ?? 10_000, requestTimeout),
      keepAliveTimeout: options.keepAliveTimeoutMs ?? 5_000,
      // How often node checks the two timeouts above (its default, 30 s, lets slowloris linger).
      connectionsCheckingInterval: 1_000,
    }, (req: IncomingMessage, res: ServerResponse) => {
      let closing = draining;
      // Node forgets a request whose body never finished once its response is done: it
      // would never emit end, error or close, and a handler reading it would wait forever.
      res.once("close", () => {
        if (closing && !req.complete) req.destroy();
      });
      if (draining) res.setHeader("connection", "close");
      else if (_declaresBody(req)) {
        // A body left unread (a cap passed, a handler that ignores it) must be read off the
        // socket before the connection can serve again. A small declared rest is read and
        // discarded (keep-alive, bounded by @hono/node-server's drain); a large or unknown one
        // closes the connection instead, and so does a 408 (RFC 9110 §15.5.9: the client is
        // too slow for its rest to be awaited).
        const writeHead = res.writeHead;
        res.writeHead = function (this: ServerResponse, ...args: Parameters<ServerResponse["writeHead"]>) {
          if (!req.complete && (args[0] === 408 || closesOnUnreadBody(_declared(req)))) {
            this.setHeader("connection", "close");
            closing = true;
          }
          return writeHead.apply(this, args);
        } as ServerResponse["writeHead"];
      }
      void translate(req, res);
    });
    http.on("connection", (socket: Socket) => {
      if (open >= config.maxConnections) {
        socket.end(OVER_CAP);
        return;
      }
      open++;
      socket.once("close", () => open--);
    });
    const closed = new Promise<void>((resolve, reject) => {
      http.once("close", resolve);
      http.on("error", reject);
    });
    closed.catch(() => {}); // observed by the drain; never an unhandled rejection here
    return new Promise<Server>((resolve, reject) => {
      http.once("error", reject);
      http.listen(port, hostname, () => {
        http.off("error", reject);
        const address = http.address();
        const bound = typeof address === "object" && address !== null ? address : { address: hostname, port };
        resolve({
          address: { hostname: bound.address, port: bound.port },
          stopAccepting() {
            draining = true;
            return new Promise<void>((done) => {
              // close() waits for keep-alive sockets; closing idle ones repeatedly lets it finish.
              const sweep = setInterval(() => http.closeIdleConnections(), 50);
              sweep.unref();
              http.close(() => {
                clearInterval(sweep);
                done();
              });
              http.closeIdleConnections();
            });
          },
          closeAll: () => http.closeAllConnections(),
          closed,
          connectionCount: () => open,
        });
      });
    });
  };
}
