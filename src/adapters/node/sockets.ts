// What the Node adapter does with a socket beyond node:http's own timeouts: close one whose
// client stopped reading its answer (the write-stall sweep), and close one whose request's
// body is still arriving without resetting it under the answer (a lingering close).
import type { Socket } from "node:net";
import type { Logger } from "../../core/mod.ts";

// Where the stall sweep keeps what it saw of a socket's sending: the bytes of completed
// writes, the least queued for the kernel, and since when neither has moved.
const DONE = Symbol("serve-hygiene bytes written");
const QUEUED = Symbol("serve-hygiene bytes queued");
const SINCE = Symbol("serve-hygiene sending stalled since");

interface _Sending {
  [DONE]?: number;
  [QUEUED]?: number;
  [SINCE]?: number | undefined;
  // libuv's bytes not yet taken by the kernel: what node's own socket timeout reads to tell a
  // write in progress from a stalled one (one large write stays whole in writableLength).
  _handle?: { writeQueueSize?: number } | null;
}

/**
 * Closes each connection that has bytes waiting to be sent and has sent none for `stallMs`: a
 * client that stopped reading a response larger than the socket's buffers. Nothing else ends
 * it — the guard's deadline is over once the handler settled, node's own request timeout is
 * off (the deadline is the guard's), and node's header and keep-alive timeouts do not apply
 * while a response is being written — so `maxConnections` such clients held the connection
 * cap for as long as they liked (a review: eight of them, 8 MiB answers unread, refused every
 * newcomer 503 for 45 s). An idle stream (nothing to send) is not touched. Read at each sweep,
 * every quarter of `stallMs` (at most 1 s): nothing a request. Progress is what libuv sees: its
 * queue shrinks when the kernel takes bytes, which it does once about a third of the socket's
 * send buffer is free (autotuned up to 4 MiB here) — so a reader must take ~1.3 MiB within
 * `stallMs` to count as reading (a review: at 10 s a 60 KB/s reader was cut, 150 KB/s was not;
 * hence 60 s, nginx's `send_timeout`, which has the same per-write grain).
 */
export function _sweepStalled(open: ReadonlySet<Socket>, stallMs: number, log: Logger): () => void {
  if (stallMs === Infinity) return () => {};
  const every = Math.min(1000, Math.max(10, stallMs / 4));
  let last = performance.now();
  const sweep = setInterval(() => {
    const now = performance.now();
    // A sweep twice as late as planned or later: the process was paused (SIGSTOP, a debugger,
    // `docker pause`) or its loop blocked, and no socket could send meanwhile; the stall time
    // starts again from now, and this sweep closes none. Counted through it, every healthy
    // download of a large answer was cut at the first sweep after a pause of `stallMs` (the
    // clocks review: 48 MiB answers read at 6 MB/s, truncated after a 2.5 s SIGSTOP at 1 s).
    const resumed = now - last > 2 * every;
    last = now;
    // One line a sweep however many it closes (a logs review: one a connection let a client
    // that opened many and stopped reading write as many lines).
    let closed = 0;
    let unsent = 0;
    for (const socket of open) {
      const s = socket as Socket & _Sending;
      const pending = socket.writableLength;
      const queued = s._handle?.writeQueueSize ?? pending;
      if (pending === 0 || queued === 0) {
        s[SINCE] = undefined;
        continue;
      }
      // Progress: a write completed (node counts bytes still buffered in bytesWritten too), or
      // the kernel took part of the one in flight.
      const done = socket.bytesWritten - pending;
      if (resumed || s[SINCE] === undefined || done > s[DONE]! || queued < s[QUEUED]!) {
        s[DONE] = done;
        s[QUEUED] = queued;
        s[SINCE] = now;
      } else if (now - s[SINCE] >= stallMs) {
        closed++;
        unsent += queued;
        socket.destroy();
      }
    }
    if (closed > 0) log({ level: "debug", msg: "closed connections whose clients stopped reading", connections: closed, writeStallTimeoutMs: stallMs, unsentBytes: unsent });
  }, every);
  sweep.unref();
  return () => clearInterval(sweep);
}

/** How long a connection closed with its request's body unread goes on reading (and discarding) it. */
export const LINGER_MS = 2000;

/**
 * A lingering close (as nginx and Apache do), node's `destroySoon` for a connection closed
 * after an answer to a request whose body is still arriving: the answer is written, then FIN,
 * and the socket is destroyed once the client closes its side, or after LINGER_MS, while node
 * reads the body's rest and discards it (it dumps an unread request). Destroyed at once, with
 * the client's bytes unread, the connection is reset, and the reset takes what the client has
 * not read yet of the answer: a 1 MiB answer to a 100 KB body the handler ignored arrived with
 * 0 bytes (a review).
 */
export function _lingeringClose(this: Socket): void {
  this.end();
  const destroy = () => this.destroy();
  const timer = setTimeout(destroy, LINGER_MS);
  timer.unref();
  this.once("end", destroy);
  this.once("close", () => clearTimeout(timer));
}
