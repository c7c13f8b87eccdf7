// IncomingMessage/ServerResponse <-> Request/Response, streaming both ways.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { PeerAddress } from "../../core/mod.ts";

/** The Web Request for a node request; `signal` should abort when the client goes away. */
export function toRequest(req: IncomingMessage, signal: AbortSignal, defaultHost: string): Request {
  const headers = new Headers();
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) headers.append(raw[i]!, raw[i + 1]!);
  const method = req.method ?? "GET";
  const init: RequestInit & { duplex?: "half" } = { method, headers, signal };
  if (method !== "GET" && method !== "HEAD") {
    init.body = bodyOf(req);
    init.duplex = "half";
  }
  return new Request(`http://${req.headers.host ?? defaultHost}${req.url ?? "/"}`, init);
}

/**
 * The request body as a pull-based stream: node reads from the socket only as fast as the
 * handler consumes, and a cancel (a body cap passed) stops reading without destroying the
 * socket, so the 413 can still be written. Written by hand: node 20's Readable.toWeb keeps
 * enqueueing after a cancel and throws ERR_INVALID_STATE as an uncaught exception.
 */
function bodyOf(req: IncomingMessage): ReadableStream<Uint8Array> {
  let cancelled = false;
  const next = () =>
    new Promise<void>((resolve) => {
      const done = () => {
        req.off("readable", done).off("end", done).off("error", done).off("close", done);
        resolve();
      };
      req.on("readable", done).on("end", done).on("error", done).on("close", done);
    });
  let failure: unknown;
  req.on("error", (error) => (failure = error));
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        for (;;) {
          if (cancelled) return;
          const chunk = req.read() as Uint8Array | null;
          if (chunk !== null) return controller.enqueue(chunk);
          if (failure !== undefined) return controller.error(failure);
          if (req.readableEnded) return controller.close();
          if (req.destroyed) {
            return req.complete ? controller.close() : controller.error(new DOMException("The client disconnected", "AbortError"));
          }
          await next();
        }
      },
      cancel() {
        cancelled = true;
        req.pause();
      },
    },
    { highWaterMark: 0 },
  );
}

/** The transport peer of a node request. */
export function peerOf(req: IncomingMessage): PeerAddress | undefined {
  const s = req.socket;
  if (s.remoteAddress === undefined) return undefined;
  return { address: s.remoteAddress, port: s.remotePort, family: s.remoteFamily === "IPv6" ? "IPv6" : "IPv4" };
}

/**
 * Writes `response` to `res`, honouring backpressure; stops reading the body when the
 * client goes away. `close` adds `Connection: close` (draining).
 */
export async function writeResponse(res: ServerResponse, response: Response, draining: boolean): Promise<void> {
  // A body left unread (a cap passed, a handler that ignored it) would have to be read off
  // the socket before the connection could serve again: close it instead.
  const close = draining || !res.req.complete;
  const flat: string[] = [];
  response.headers.forEach((value, key) => {
    if (key !== "set-cookie") flat.push(key, value);
  });
  for (const cookie of response.headers.getSetCookie()) flat.push("set-cookie", cookie);
  if (close && !response.headers.has("connection")) flat.push("connection", "close");
  res.writeHead(response.status, response.statusText || undefined, flat);
  const body = response.body;
  if (body === null || res.req.method === "HEAD") {
    void body?.cancel().catch(() => {});
    res.end();
    return;
  }
  const reader = body.getReader();
  const gone = () => void reader.cancel().catch(() => {});
  res.once("close", gone);
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (!res.write(value)) await new Promise<void>((resolve) => {
        res.once("drain", resolve);
        res.once("close", resolve);
      });
      if (res.destroyed) return;
    }
    res.end();
  } catch {
    // The body stream failed mid-response: the only honest signal left is a cut connection.
    res.destroy();
  } finally {
    res.off("close", gone);
  }
}
