import {
  type _KeyList,
  closesOnUnreadBody,
  declaredLength,
  dropsConnection,
  fallbackResponse,
  type GuardedHandler,
  isBodyTooLargeError,
  type Listen,
  type Logger,
  peerAddress,
  type PeerAddress,
  type ServeHandle,
  type ServeOptions,
  serveWith,
  _isDrainAbort,
  _closing,
  _optionalBoolean,
  _upgradedWebSocket,
  _resetRemote,
  _refusesUpload,
  _safeLogger,
} from "../../core/mod.ts";
import { _BodyWatch, _DROP } from "./drop.ts";
import { _Uploads } from "./uploads.ts";
import { createDenoHost, type DenoHostOptions } from "./host.ts";
import { _watchLegacyAbort } from "./legacy_abort.ts";

/** Options of the Deno adapter's {@linkcode serve}. */
export interface DenoServeOptions extends ServeOptions, DenoHostOptions {
  /**
   * When the body cap refuses an upload (413) whose unread rest is over 64 KiB or of unknown
   * length — or a gate before it does (a 429, a 503) — drop the connection after the answer's
   * text instead of letting Deno read the rest to its end: the client gets the status and the
   * text, but the chunked body is left unterminated (reading it fails). A handler's own answer to a body it left unread is sent
   * whole and Deno reads the rest (dropped, the reset cut large answers short). `false`: Deno
   * reads a refused upload's rest to its end too, however long it is.
   * @default true
   */
  dropUnreadBody?: boolean | undefined;
}

// Deno.serve reads a request body the handler left unread to its end before it closes the
// connection, whatever the response says (Connection: close, a cancelled body: see
// scripts/probes/unread_body.ts and deno_slow_connections.ts). Its one way to drop a
// connection is a response body that fails after the head went out (drop.ts). Two answers end
// that way: one the core marked (`dropConnectionAfter`: a 408 to a trickling body), and the
// body cap's 413 to a request whose unread rest is large or unknown (a refused upload, which
// may never end). The client has the status and the text, but the chunked body never ends.
// Not a handler's own answer: a connection dropped with the request's rest unread is reset,
// and the reset took what the client had not read yet of the answer (a review: 113 KiB of a
// 256 KiB answer arrived, 4.3 of 5 MiB; a client still sending loses even a short one). Deno
// reads that rest, then the connection goes on, as a bare Deno.serve's does. (Reading it for
// a while before the drop, a lingering close, cannot be had: a read Deno holds pending keeps
// the drop from happening until the client's next byte, and a declared body's next read may
// not come back for many bytes.)
// From the stop signal on (its pre-stop delay too), every such `Connection: close` answer is
// dropped as well: the drain waits for the connection, and Deno reading a slow upload's rest
// turned a clean drain forced (a review). An answer given before the signal to a client still
// sending that rest at the drain holds it the same way (the capability table).
// Whether a request with a body stream has a body to wait for at the stop: Deno gives every
// request but a GET or HEAD one, an empty one too (Content-Length: 0, or neither length nor
// chunking on HTTP/1.1, all serve() speaks) — counted, a bodiless POST running at the stop
// kept the port open for the whole of its handler (a review).
function _uploads(headers: Headers): boolean {
  const declared = declaredLength(headers);
  // A length Deno's parser took but the core reads as malformed (past 2^53 − 1) is a body too.
  return declared.kind === "length" ? declared.bytes > 0 : declared.kind === "malformed" || headers.has("transfer-encoding");
}

// A request that arrived while the stop waits for the uploads in progress (uploads.ts: past the
// pre-stop delay, the port still accepting only for them) is dropped after its answer (the
// draining gate's 503) whatever its body's size: Deno reading even a small rest held the drain
// at that client's pace (a review: a stalled 20-byte POST made a clean drain forced). Before
// the server would have refused its connection. Not one served in the pre-stop delay: a drop
// with the rest unread can reset a handler's answer away.
function _drops(request: Request, res: Response, drop: boolean, draining: boolean, hasBody: boolean, arrivedLate: boolean): boolean {
  if (dropsConnection(res)) return true;
  // A GET or HEAD is never answered for an unread body (its body is not checked on Deno).
  // A gate's refusal of an upload (the core marks it: _refusingUpload) is dropped as the 413 is.
  if (!drop || (res.status !== 413 && !draining && !_refusesUpload(res)) || request.method === "GET" || request.method === "HEAD") return false;
  // Nor a request whose body is empty (Content-Length: 0, or no length on HTTP/1.1): Deno has
  // nothing to read, and its answer was cut for an "unknown length" (a DELETE at the drain).
  if (!hasBody) return false;
  if (arrivedLate && !request.bodyUsed && res.headers.get("connection") === "close") return true;
  // A body the handler read from is not dropped for (its rest comes at the client's pace, as it
  // did while the handler read it), but for the body cap's 413.
  if (res.headers.get("connection") !== "close" || (request.bodyUsed && res.status !== 413)) return false;
  return closesOnUnreadBody(declaredLength(request.headers));
}

// The peer, mapped only when a keyed gate or the handler reads it (one object a request, no closure).
// A request without a body says so (`declaresBody: false`): the framing gate then reads
// nothing of it; with one it says nothing, and the framing gate reads the head.
class _PeerInfo {
  readonly #info: Deno.ServeHandlerInfo<Deno.NetAddr>;
  readonly declaresBody: false | undefined;
  #reset = false;
  constructor(info: Deno.ServeHandlerInfo<Deno.NetAddr>, bodyless: boolean) {
    this.#info = info;
    this.declaresBody = bodyless ? false : undefined;
  }
  get peer(): PeerAddress | undefined {
    const remote = this.#info.remoteAddr;
    // Deno reports 0.0.0.0:0 for a client that reset its connection before this was read:
    // no peer (the key "unknown"), not a peer whose key reads as an address (a review).
    if (_resetRemote(remote)) {
      this.#reset = true;
      return undefined;
    }
    return peerAddress(remote.hostname, remote.port);
  }
  /** True once the peer was read as a reset connection's; until then the request's signal says. */
  get clientGone(): true | undefined {
    return this.#reset ? true : undefined;
  }
  /** A WebSocket handshake its handler upgraded: Deno takes only its 101 (any other answer closes the listener). */
  upgrading(request: Request): boolean {
    return _upgradedWebSocket(request);
  }
}

/** What the adapter logs for an answer whose body failed while it was sent (Deno's onError). */
export const BODY_FAILED = "response body failed while it was sent (its stream errored after the handler returned)";

/** The Deno.serve binding: listens with the guarded fetch and exposes the core's Server. */
export function listenDeno(options: { log: Logger; dropUnreadBody?: boolean | undefined }): Listen {
  const drop = options.dropUnreadBody !== false;
  const fetchFailed = (error: unknown) => fallbackResponse(error, options.log);
  return (fetch, { port, hostname, stopping }) => {
    const uploads = new _Uploads();
    let stopped = false;
    const server = Deno.serve({
      port,
      hostname,
      onListen() {},
      handler(request, info) {
        // The guarded fetch's own failure is answered here (the last resort: the guard answers a
        // handler's): Deno's onError gets the failures of answers already under way.
        try {
          // A body is read through a watch, so a response the core marked can end the connection.
          const watch = request.body === null ? undefined : new _BodyWatch();
          if (watch === undefined) _watchLegacyAbort(request, info, options.log);
          const hasBody = watch !== undefined && _uploads(request.headers);
          if (hasBody) uploads.add(watch, info.completed);
          let answered = fetch(watch?.watch(request) ?? request, new _PeerInfo(info, watch === undefined));
          // From the stop signal on, every answer says the connection closes (_closing). Deno
          // itself keeps the connection open after it: the client (a proxy's pool) closes it.
          if (stopping?.aborted === true) answered = _closing(answered);
          if (watch === undefined) return answered instanceof Promise ? answered.then(undefined, fetchFailed) : answered;
          const arrivedLate = uploads.awaited;
          const end = (res: Response) => (_drops(request, res, drop, stopping?.aborted === true, hasBody, arrivedLate) ? watch.ending(res) : res);
          return answered instanceof Promise ? answered.then(end, fetchFailed) : end(answered);
        } catch (error) {
          return fetchFailed(error);
        }
      },
      onError(error) {
        // The head already went out: the connection is dropped (or, a forced drain cut the
        // stream: the drain logged that once, not once a stream; or an answer streaming the
        // request body back passed its cap: the client's doing, reported as a refusal — logged
        // as "guarded handler failed", any client could write an error line a request).
        if (error === _DROP || _isDrainAbort(error) || isBodyTooLargeError(error)) return new Response(null, { status: 500 });
        // The guarded fetch's failure is answered in the handler, and the guard answers a
        // handler's: what reaches here is an answer that failed while it was sent — its body
        // stream errored after the handler returned (the connection is cut). Logged as "guarded
        // handler failed", it read as a handler's throw, which the guard's onError had not seen
        // (the streaming review).
        options.log({ level: "error", msg: BODY_FAILED, error });
        return new Response(null, { status: 500 });
      },
    });
    const addr = server.addr;
    return {
      address: { hostname: addr.hostname, port: addr.port },
      // Refuses new connections, closes idle keep-alive, settles when in-flight is done — once
      // the uploads in progress have been read (Deno's shutdown fails their reads: uploads.ts).
      stopAccepting: async () => {
        stopped = true;
        await uploads.ended();
        await server.shutdown();
      },
      // Deno cannot escalate a started shutdown (aborting its signal then crashes the
      // process). The forced drain rests on the core: every in-flight request's signal has
      // fired (abortAll) before this is called, and the process exits after the flush. An
      // upload the stop still waited for waits no more.
      closeAll: () => uploads.cut(),
      // Deno's listener ends by itself only when it failed (an upgrade answered with something
      // else than its 101 ends it): a failure, not a clean stop (a review: a server gone read
      // as "clean", exit 0).
      closed: server.finished.then(() => {
        if (!stopped) throw new Error("Deno closed the server's listener by itself (a WebSocket handshake answered with something else than its 101?)");
      }),
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
export async function serve(handler: GuardedHandler, options: DenoServeOptions = {}): Promise<ServeHandle> {
  // async: a bad option rejects the promise it returns, as every other failure does (a throw
  // escaped `serve(…).catch(…)`: a review).
  _optionalBoolean("serve on Deno", "dropUnreadBody", options.dropUnreadBody);
  const host = createDenoHost(options);
  const listen = listenDeno({ log: _safeLogger(options.log ?? host.log!), dropUnreadBody: options.dropUnreadBody });
  return serveWith(host, Object.assign(listen, { optionKeys: DENO_KEYS }), handler, options);
}

/** The Deno adapter's own options (serve() checks every key given: see ServeOptions). */
const DENO_KEYS = Object.keys({ dropUnreadBody: true } satisfies _KeyList<Omit<DenoServeOptions, keyof ServeOptions>>);
