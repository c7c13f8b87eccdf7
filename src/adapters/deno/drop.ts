// How the Deno adapter ends a connection the core marked (`dropConnectionAfter`), measured on
// Deno 2.9 by scripts/probes/deno_slow_connections.ts:
//   - Deno ignores `Connection: close` while a request body is unread: it reads the body to
//     its end, at whatever pace the client sends it. Cancelling the body does not stop it.
//   - It drops the connection when a response body fails — but only if no read of the
//     request body is pending in Deno at that moment; with one pending, the failure is
//     swallowed and the connection stays.
// So a request body is read through a stream that knows whether a read is pending, and a
// marked response goes out whole (status, headers, body), then fails once no read is
// pending (at the client's next byte, or when it leaves). The client sees the answer, then a
// chunked body without its last chunk.

/** The error a marked response body fails with; `onError` recognises and ignores it. */
export const _DROP = new Error("serve-hygiene: dropping the connection after this response");

/** A request body read through a stream that records its pending read. */
export class _BodyWatch {
  pending: Promise<unknown> | undefined = undefined;
  /** Called once the body was read to its end, failed or was cancelled (see uploads.ts). */
  onEnd: (() => void) | undefined = undefined;

  /** `request` with its body read through the watch (the same request when it has none). */
  watch(request: Request): Request {
    const original = request.body;
    if (original === null) return request;
    // The original body is locked only at the first read: left untouched, Deno still sees it
    // unread and discards a small rest itself (keep-alive) — a locked one it cannot.
    let source: ReadableStreamDefaultReader<Uint8Array> | undefined;
    let cancelled = false;
    const body = new ReadableStream<Uint8Array>({
      pull: async (controller) => {
        source ??= original.getReader();
        const read = source.read();
        this.pending = read;
        let next: Awaited<typeof read>;
        try {
          next = await read;
        } catch (error) {
          this.#ended();
          throw error;
        } finally {
          if (this.pending === read) this.pending = undefined;
        }
        if (cancelled) return;
        if (next.done) {
          this.#ended();
          controller.close();
        } else controller.enqueue(next.value);
      },
      cancel: async (reason) => {
        cancelled = true;
        this.#ended();
        // Cancelled under a pending read, Deno would keep that read and swallow the failure
        // meant to drop the connection: the read is let finish (the client's next byte).
        await this.pending?.catch(() => {});
        await (source ?? original).cancel(reason);
      },
    }, { highWaterMark: 0 });
    return new Request(request, { body, duplex: "half" } as RequestInit);
  }

  #ended(): void {
    const onEnd = this.onEnd;
    this.onEnd = undefined;
    onEnd?.();
  }

  /**
   * `res` sent whole, then failed so that Deno drops the connection. An answer that may carry
   * no body (204, 205, 304) has nothing to fail: it is sent as it is, and Deno reads the rest
   * of the request's body before it closes (the capability table's unread-body row).
   */
  ending(res: Response): Response {
    if (res.status === 204 || res.status === 205 || res.status === 304) return res;
    const reader = res.body?.getReader();
    const body = new ReadableStream<Uint8Array>({
      pull: async (controller) => {
        const next = reader === undefined ? undefined : await reader.read();
        if (next !== undefined && !next.done) return controller.enqueue(next.value);
        await this.pending?.catch(() => {});
        controller.error(_DROP);
      },
      cancel: (reason) => reader?.cancel(reason),
    });
    const headers = new Headers(res.headers);
    headers.delete("content-length");
    return new Response(body, { status: res.status, statusText: res.statusText, headers });
  }
}
