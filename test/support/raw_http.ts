// A tiny HTTP/1.1 client over node:net for what fetch cannot send or show: malformed
// framing (`Content-Length: abc`), hand-written chunked bodies, a body shorter than its
// declared length, and whether the server closed the connection or refused it outright.
import { connect, type Socket } from "node:net";

export interface RawResponse {
  readonly status: number;
  /** Header names lower-cased; repeated headers joined with ", ". */
  readonly headers: ReadonlyMap<string, string>;
  readonly body: string;
}

/** One client connection; responses are read in order. */
export interface RawConnection {
  write(data: string | Uint8Array): void;
  /** The next response on this connection (rejects if the connection ends before it is whole). */
  response(): Promise<RawResponse>;
  /** Settles when the connection has ended (the server closed it, or it was reset). */
  readonly closed: Promise<void>;
  isClosed(): boolean;
  destroy(): void;
}

/** Opens a connection to 127.0.0.1:`port`; rejects with the socket error (its `code`, e.g. ECONNREFUSED). */
export function rawConnect(port: number): Promise<RawConnection> {
  return new Promise((resolve, reject) => {
    const socket: Socket = connect({ host: "127.0.0.1", port });
    let buffer = Buffer.alloc(0);
    let ended = false;
    let wake: (() => void) | undefined;
    let markClosed!: () => void;
    const closed = new Promise<void>((r) => (markClosed = r));
    const onConnectError = (error: Error) => reject(error);
    socket.once("error", onConnectError);
    socket.on("data", (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      wake?.();
    });
    socket.on("close", () => {
      ended = true;
      markClosed();
      wake?.();
    });
    socket.once("connect", () => {
      socket.off("error", onConnectError);
      socket.on("error", () => {}); // a reset shows up as `closed`
      resolve({
        write: (data) => void socket.write(data),
        async response() {
          for (;;) {
            const parsed = _parse(buffer, ended);
            if (parsed !== undefined) {
              buffer = buffer.subarray(parsed.used);
              return parsed.response;
            }
            if (ended) throw new Error(`connection closed before a whole response; got ${JSON.stringify(buffer.toString("latin1"))}`);
            await new Promise<void>((r) => (wake = r));
          }
        },
        closed,
        isClosed: () => ended,
        destroy: () => socket.destroy(),
      });
    });
  });
}

/** What a brand-new connection sees: an answer, a refusal, or a reset/close with no answer. */
export type NewConnection =
  | { readonly kind: "answered"; readonly status: number }
  | { readonly kind: "refused"; readonly code: string }
  | { readonly kind: "dropped" };

/** Opens a new connection and sends one `GET path`; reports what happened. */
export async function probeNewConnection(port: number, path = "/"): Promise<NewConnection> {
  let conn: RawConnection;
  try {
    conn = await rawConnect(port);
  } catch (error) {
    return { kind: "refused", code: String((error as { code?: unknown }).code ?? error) };
  }
  try {
    conn.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`);
    const res = await conn.response();
    return { kind: "answered", status: res.status };
  } catch {
    return { kind: "dropped" };
  } finally {
    conn.destroy();
  }
}

/** A whole response from the front of `buf`, or undefined if it is not whole yet. */
function _parse(buf: Buffer, ended: boolean): { response: RawResponse; used: number } | undefined {
  const p = parseResponse(buf, ended);
  return p?.complete ? { response: { status: p.status, headers: p.headers, body: p.body }, used: p.used } : undefined;
}

/** A parsed response; `complete` is false when the connection ended before the framed body did. */
export interface Parsed {
  readonly status: number;
  readonly headers: ReadonlyMap<string, string>;
  readonly body: string;
  readonly complete: boolean;
  /** Bytes of the buffer this response used (when complete). */
  readonly used: number;
}

/** Parses one HTTP/1.1 response at the front of `buf`; undefined when the head is not whole. */
export function parseResponse(buf: Buffer, ended: boolean): Parsed | undefined {
  const headEnd = buf.indexOf("\r\n\r\n");
  if (headEnd < 0) return undefined;
  const [statusLine, ...lines] = buf.subarray(0, headEnd).toString("latin1").split("\r\n");
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine ?? "")?.[1]);
  if (!Number.isInteger(status)) throw new Error(`bad status line ${JSON.stringify(statusLine)}`);
  const headers = new Map<string, string>();
  for (const line of lines) {
    const colon = line.indexOf(":");
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    headers.set(name, headers.has(name) ? `${headers.get(name)}, ${value}` : value);
  }
  const at = headEnd + 4;
  // An informational answer (100 Continue) is a head alone, the final one follows it; a 204
  // or 304 has no body whatever its headers say (RFC 9112 §6.3).
  if (status < 200 || status === 204 || status === 304) return { status, headers, body: "", complete: true, used: at };
  if (/chunked/i.test(headers.get("transfer-encoding") ?? "")) {
    const parts: Buffer[] = [];
    let p = at;
    for (;;) {
      const lineEnd = buf.indexOf("\r\n", p);
      if (lineEnd < 0) break;
      const size = parseInt(buf.subarray(p, lineEnd).toString("latin1"), 16);
      if (!Number.isInteger(size) || buf.length < lineEnd + 2 + size + 2) break;
      parts.push(buf.subarray(lineEnd + 2, lineEnd + 2 + size));
      p = lineEnd + 2 + size + 2;
      if (size === 0) {
        return { status, headers, body: Buffer.concat(parts).toString("utf8"), complete: true, used: p };
      }
    }
    if (!ended) return undefined;
    return { status, headers, body: Buffer.concat(parts).toString("utf8"), complete: false, used: buf.length };
  }
  const length = headers.get("content-length");
  if (length !== undefined) {
    const n = Number(length);
    if (buf.length >= at + n) return { status, headers, body: buf.subarray(at, at + n).toString("utf8"), complete: true, used: at + n };
    if (!ended) return undefined;
    return { status, headers, body: buf.subarray(at).toString("utf8"), complete: false, used: buf.length };
  }
  if (!ended) return undefined;
  return { status, headers, body: buf.subarray(at).toString("utf8"), complete: true, used: buf.length };
}

