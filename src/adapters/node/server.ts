import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { getRequestListener, RequestError } from "@hono/node-server";
import {
  type _AnswerHead,
  _HEAD,
  type _HeadAnswer,
  _refusalHead,
  type _ServingFetch,
  type _Translate,
  closesOnUnreadBody,
  type ConnectionSlot,
  denyResponse,
  fallbackResponse,
  type Listen,
  type Logger,
  type Server,
  MAX_TIMER_MS,
} from "../../core/mod.ts";
import { _continue, _declared, _declaresBody, _holdContinue, _NodeInfo } from "./request_info.ts";
import { _lingeringClose, _sweepStalled } from "./sockets.ts";

/** Node-only transport settings of {@linkcode listenNode}. */
export interface NodeListenOptions {
  /**
   * Headers must arrive within this (slowloris is cut with 408 by node itself).
   * @default min(10000, requestTimeoutMs)
   */
  headersTimeoutMs?: number | undefined;
  /** Idle keep-alive sockets close after this. @default 5000 */
  keepAliveTimeoutMs?: number | undefined;
  /** See {@linkcode NodeServeOptions.writeStallTimeoutMs}. @default 60000 */
  writeStallTimeoutMs?: number | undefined;
  log: Logger;
}


// A client over the connection cap gets an HTTP answer it can act on, not a reset: the same
// head and body as every other 503 (refuse.ts), written to the socket before any request.
const overCap = (retryAfterMs: number): string => {
  const { headers, body } = _refusalHead(503, retryAfterMs, true);
  const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join("");
  return `HTTP/1.1 503 Service Unavailable\r\n${lines}\r\n${body}`;
};

/** Where the connection gate's verdict on a socket is kept: its slot, or null when refused. */
const SLOT = Symbol("serve-hygiene connection slot");
/** The response a socket is answering now (its latest request's). */
const RESPONSE = Symbol("serve-hygiene response");
type _Gated = Socket & { [SLOT]?: ConnectionSlot | null; [RESPONSE]?: ServerResponse };

/** Whether a response's connection closes after it (draining, or a body left unread). */
const CLOSING = Symbol("serve-hygiene closing");
type _Tracked = ServerResponse & { [SLOT]?: ConnectionSlot | undefined; [CLOSING]?: boolean };

/**
 * A response is done: its connection is idle again. Node forgets a request whose body never
 * finished once its response is done: it would never emit end, error or close, and a handler
 * reading it would wait forever, so a closing one is destroyed — unless its connection
 * lingers (_lingeringClose), which ends it within LINGER_MS: destroyed now, the request would
 * take its socket with it, and the reset the answer.
 */
function _responseClosed(this: _Tracked): void {
  this[SLOT]?.requestEnded();
  if (this[CLOSING] === true && !this.req.complete && (this.req.socket as { destroySoon?: unknown } | null)?.destroySoon !== _lingeringClose) this.req.destroy();
}

/** The node:http binding: listens with the guarded fetch and exposes the core's Server. */
export function listenNode(options: NodeListenOptions): Listen {
  return (fetch, { port, hostname, config, connections, stopping }) => {
    const OVER_CAP = overCap(connections.retryAfterMs);
    let draining = false;
    /** The sockets counted open (a drain closes the connections its in-flight answers are on). */
    const open = new Set<_Gated>();
    // The guard's head path: a request without a body meets the gates that need nothing of
    // its Request before @hono/node-server builds one, and a refusal there is written here
    // from prebuilt parts — the refusal path pays for no translation.
    const head = (fetch as _ServingFetch)[_HEAD];
    // What the head path hands over, read back by the translation it calls (synchronously:
    // @hono/node-server builds the Request and calls its fetch before its first await). The
    // head path calls it inside head(), or later, when a wait passes: the info carries the pair.
    let next: ((request: Request) => Response | Promise<Response>) | undefined;
    const translateHead: _Translate = (k, info) => {
      const { incoming, outgoing } = info as _NodeInfo;
      next = k;
      try {
        void translate(incoming, outgoing);
      } finally {
        next = undefined;
      }
    };
    // A refusal from the head path, written from its parts: at once, or after a wait (the client
    // may have left meanwhile). With `error`, the path failed outside @hono/node-server's own
    // catch: logged as its errorHandler would, and answered 500.
    const answerHead: _AnswerHead = (refused, info, error) => {
      const { outgoing } = info as _NodeInfo;
      if (error !== undefined) options.log({ level: "error", msg: "guarded handler failed", error });
      if (!outgoing.headersSent && !outgoing.destroyed) outgoing.writeHead(refused.status, refused.headers).end(refused.body);
    };
    // @hono/node-server translates IncomingMessage/ServerResponse to Request/Response: it
    // measured 4x faster than a translation through undici's own Request/Response (its
    // lightweight objects build the real ones only when touched), and keeps request and
    // response bodies streaming with backpressure. Like its serve(), it installs its
    // compatible Request/Response as globals.
    const translate = getRequestListener((request, env) => {
      const k = next;
      if (k !== undefined) {
        next = undefined;
        return k(request);
      }
      const incoming = env.incoming as IncomingMessage;
      // The head decides the body's framing: the guard reads none of the translated request's headers.
      const declaresBody = _declaresBody(incoming);
      // A Response answered synchronously (a refusal, a synchronous handler) takes
      // @hono/node-server's direct path: no close listener, no awaited response object.
      return fetch(request, new _NodeInfo(incoming, env.outgoing as ServerResponse, declaresBody));
    }, {
      // A request @hono/node-server cannot form (an invalid Host, `OPTIONS *`, HTTP/1.0 with no
      // Host) is the client's error, answered as a parser's 400 would be: no 500, no log line a
      // request (Bun's parser and the body gate's malformed-target answer 400 too).
      errorHandler: (error) => (error instanceof RequestError ? denyResponse(400, { close: true }) : fallbackResponse(error, options.log)),
    });
    const http: HttpServer = createServer({
      // Off: the guard's deadline bounds a request (408 + close, a trickled body included),
      // and a route may raise or lift it (context.timeoutMs); node's own would cut an upload
      // at the service's deadline with a bare 408 and no deny event.
      requestTimeout: 0,
      headersTimeout: Math.min(options.headersTimeoutMs ?? 10_000, config.requestTimeoutMs),
      // Node arms its idle timer 1 s past this: at most the longest timer less that second (a
      // larger one printed a TimeoutOverflowWarning a keep-alive response).
      keepAliveTimeout: Math.min(options.keepAliveTimeoutMs ?? 5_000, MAX_TIMER_MS - 1_000),
      // How often node checks the two timeouts above (its default, 30 s, lets slowloris linger).
      connectionsCheckingInterval: 1_000,
    });
    const onRequest = (req: IncomingMessage, res: ServerResponse) => {
      const slot = (req.socket as _Gated)[SLOT];
      // A refused connection is being destroyed: whatever node parsed on it never runs.
      if (slot === null) return;
      slot?.requestStarted();
      (req.socket as _Gated)[RESPONSE] = res;
      const tracked = res as _Tracked;
      tracked[SLOT] = slot;
      tracked[CLOSING] = draining;
      // One shared listener, no closure per request (see _responseClosed).
      res.on("close", _responseClosed);
      const declaresBody = _declaresBody(req);
      if (draining) res.setHeader("connection", "close");
      if (declaresBody) {
        // A body left unread (a cap passed, a handler that ignores it) must be read off the
        // socket before the connection can serve again. A small declared rest is read and
        // discarded (keep-alive, bounded by @hono/node-server's drain); a large or unknown one
        // closes the connection instead, and so does a 408 (RFC 9110 §15.5.9: the client is
        // too slow for its rest to be awaited) and any answer while draining — each with a
        // lingering close, so the answer is not lost to the reset of closing on unread bytes.
        const writeHead = res.writeHead;
        res.writeHead = function (this: ServerResponse, ...args: Parameters<ServerResponse["writeHead"]>) {
          // A success answered before the body was asked for (a handler streaming the body back:
          // `new Response(request.body)`) still wants it: the client waiting for 100 Continue
          // is told to send it first, or neither side would move.
          if (args[0] < 300) _continue(req, this);
          if (!req.complete && (args[0] === 408 || (this as _Tracked)[CLOSING] === true || closesOnUnreadBody(_declared(req)))) {
            this.setHeader("connection", "close");
            (this as _Tracked)[CLOSING] = true;
            (req.socket as Socket & { destroySoon(): void }).destroySoon = _lingeringClose;
          }
          return writeHead.apply(this, args);
        } as ServerResponse["writeHead"];
      }
      if (head === undefined || declaresBody) {
        void translate(req, res);
        return;
      }
      const info = new _NodeInfo(req, res, false);
      let refused: _HeadAnswer | undefined;
      try {
        refused = head(info, translateHead, answerHead);
      } catch (error) {
        answerHead(_refusalHead(500), info, error);
        return;
      }
      if (refused !== undefined) answerHead(refused, info);
    };
    http.on("request", onRequest);
    // `Expect: 100-continue`: node would answer `100 Continue` before any gate ran, and a
    // client refused (a 413 over the cap, a 429) would send its body anyway. With this listener
    // node leaves it to the guard, which continues the request once the body is wanted
    // (ServeInfo.continueBody); answered without it, node closes the connection (the client
    // may or may not send the body it held back).
    http.on("checkContinue", (req: IncomingMessage, res: ServerResponse) => {
      _holdContinue(req, res);
      onRequest(req, res);
    });
    // Gate 0 (the policy is the core's connection gate). Prepended: node:http's own listener
    // starts parsing the socket, and the verdict must be there before any request is.
    http.prependListener("connection", (socket: _Gated) => {
      const slot = connections.accept(() => socket.destroy());
      socket[SLOT] = slot ?? null;
      if (slot === undefined) {
        // Destroyed, not ended: HTTP servers allow half-open sockets, and a half-closed one
        // would go on reading requests.
        socket.write(OVER_CAP, () => socket.destroy());
        return;
      }
      open.add(socket);
      socket.once("close", () => {
        open.delete(socket);
        slot.closed();
      });
    });
    // From the stop signal on (its pre-stop delay too), an answer still to be written closes its
    // connection: the client (a proxy's pool) learns now, rather than reuse a socket the drain is
    // about to close under a request already on its way (a request arriving from here on is
    // answered so as it starts).
    const closeAnswers = () => {
      draining = true;
      for (const socket of open) {
        const res = socket[RESPONSE];
        if (res === undefined || res.headersSent || res.writableEnded) continue;
        res.setHeader("connection", "close");
        (res as _Tracked)[CLOSING] = true;
      }
    };
    if (stopping?.aborted === true) closeAnswers();
    else stopping?.addEventListener("abort", closeAnswers, { once: true });
    const stopSweep = _sweepStalled(open, options.writeStallTimeoutMs ?? 60_000, options.log);
    const closed = new Promise<void>((resolve, reject) => {
      http.once("close", resolve);
      http.on("error", reject);
    });
    closed.then(stopSweep, stopSweep);
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
            closeAnswers();
            return new Promise<void>((done) => {
              // close() waits for every open socket; closing idle ones repeatedly lets it finish.
              // Node's own idle list has keep-alive sockets between requests, not one that
              // connected and sent nothing or half a head (and close() stops the check that
              // would end it at headersTimeout): the connection gate knows those too.
              const closeIdle = () => {
                http.closeIdleConnections();
                connections.closeIdle();
              };
              const sweep = setInterval(closeIdle, 50);
              sweep.unref();
              http.close(() => {
                clearInterval(sweep);
                done();
              });
              closeIdle();
            });
          },
          // One turn later: answers the guard just gave (a forced drain's 503s) are written
          // first (they close their own sockets); what is left is then cut.
          closeAll: () => new Promise<void>((done) => setImmediate(() => (http.closeAllConnections(), done()))),
          closed,
          connectionCount: () => connections.open,
        });
      });
    });
  };
}
