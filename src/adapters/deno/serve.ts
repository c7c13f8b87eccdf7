import {
  closesOnUnreadBody,
  declaredLength,
  type GuardedHandler,
  type Listen,
  type Logger,
  type PeerAddress,
  type ServeHandle,
  type ServeOptions,
  serveWith,
} from "../../core/mod.ts";
import { createDenoHost, type DenoHostOptions } from "./host.ts";

/** Options of the Deno adapter's {@linkcode serve}. */
export interface DenoServeOptions extends ServeOptions, DenoHostOptions {
  /**
   * When an answer says `Connection: close` and the request's unread body is over 64 KiB or
   * of unknown length (a refused upload, a chunked body nobody read), drop the connection
   * after the answer's text instead of letting Deno read the rest to its end: the client gets
   * the status and the text, but the chunked body is left unterminated (reading it fails).
   * `false`: Deno reads every unread body to its end before closing, however long it is.
   * @default true
   */
  dropUnreadBody?: boolean;
}

// Deno.serve reads a request body the handler left unread to its end before it closes the
// connection, whatever the response says (Connection: close, a cancelled body: see
// scripts/probes/unread_body.ts). Its one way to drop a connection at once is a response body
// that fails after the head went out. So a `Connection: close` answer to a request whose
// unread rest is large or unknown is sent with its whole text and then fails: the client has
// the status and the text, but the chunked body never ends (the connection is dropped).
const _CLOSE = new Error("serve-hygiene: connection closed instead of reading the rest of the request body");

function _closeInstead(request: Request, res: Response): Response {
  if (res.headers.get("connection") !== "close" || (request.bodyUsed && res.status !== 413)) return res;
  if (!closesOnUnreadBody(declaredLength(request.headers))) return res;
  const reader = res.body?.getReader();
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = reader === undefined ? { done: true as const, value: undefined } : await reader.read();
      if (next.done) controller.error(_CLOSE);
      else controller.enqueue(next.value);
    },
    cancel: (reason) => reader?.cancel(reason),
  });
  return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
}

/** The Deno.serve binding: listens with the guarded fetch and exposes the core's Server. */
export function listenDeno(options: { log: Logger; dropUnreadBody?: boolean }): Listen {
  const drop = options.dropUnreadBody !== false;
  return (fetch, { port, hostname }) => {
    const server = Deno.serve({
      port,
      hostname,
      onListen() {},
      handler(request, info) {
        const answer = fetch(request, {
          get peer(): PeerAddress {
            const remote = info.remoteAddr;
            return { address: remote.hostname, port: remote.port, family: remote.hostname.includes(":") ? "IPv6" : "IPv4" };
          },
        });
        // A GET or HEAD is never answered for an unread body (its body is not checked on Deno).
        const bodyless = request.method === "GET" || request.method === "HEAD";
        return drop && !bodyless ? answer.then((res) => _closeInstead(request, res)) : answer;
      },
      onError(error) {
        if (error === _CLOSE) return new Response(null, { status: 500 }); // the head already went out
        options.log({ level: "error", msg: "guarded handler failed", error });
        return new Response("Internal Server Error", { status: 500, headers: { "content-type": "text/plain" } });
      },
    });
    const addr = server.addr;
    return {
      address: { hostname: addr.hostname, port: addr.port },
      // Refuses new connections, closes idle keep-alive, settles when in-flight is done.
      stopAccepting: () => server.shutdown(),
      // Deno cannot escalate a started shutdown (aborting its signal then crashes the
      // process). The forced drain rests on the core: every in-flight request's signal has
      // fired (abortAll) before this is called, and the process exits after the flush.
      closeAll: () => {},
      closed: server.finished,
    };
  };
}

/**
 * Serves a Web fetch handler on Deno.serve behind the guard, with SIGTERM/Ctrl-C wired to
 * the two-phase drain. Run with `deno.json`'s `"unstable": ["no-legacy-abort"]` so a
 * request's signal means "the client left".
 *
 * @example
 * ```ts
 * import { serve } from "serve-hygiene/deno";
 * const handle = await serve(() => new Response("hello"), { port: 0 });
 * console.assert((await fetch(`http://127.0.0.1:${handle.address.port}/`)).status === 200);
 * await handle.shutdown("example done");
 * ```
 */
export function serve(handler: GuardedHandler, options: DenoServeOptions = {}): Promise<ServeHandle> {
  const host = createDenoHost(options);
  return serveWith(host, listenDeno({ log: options.log ?? host.log!, dropUnreadBody: options.dropUnreadBody }), handler, options);
}
