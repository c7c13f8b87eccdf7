// Response bodies still streaming after their handler settled (SSE, long polls): the one
// thing a forced drain cannot reach through the handler's signal. Deno cannot force-close a
// connection once its graceful shutdown started (RUNTIMES.md), so the only way to end such a
// response there — and to let the user's stream clear its own timers everywhere — is to end
// the body itself: error what the runtime reads, cancel what the handler wrote.

/** The responses a guard has handed out whose bodies may outlive their handlers. */
export interface _OpenBodies {
  /**
   * `res` with its body passed through a stream this set can end; `onEnd` runs once, when the
   * body finished, failed, was cancelled by the runtime (the client left) or was forced — in
   * the last two cases with the reason it was cut (`cut`; the runtime's cancel reason, the
   * forced drain's).
   */
  track(res: Response, onEnd: (cut?: { reason: unknown; clientLeft: boolean }) => void): Response;
  /**
   * A forced drain began: a body the runtime cancels from now on (closeAll cutting its
   * connection, before forceAll) was cut by the drain, not by its client.
   */
  forcing(reason: unknown): void;
  /** Ends every tracked body: the runtime's read fails (the connection is cut), the source is cancelled. */
  forceAll(reason: unknown): void;
  /** Bodies still open. */
  readonly size: number;
}

interface _Entry {
  force(reason: unknown): void;
}

export function _createOpenBodies(): _OpenBodies {
  const open = new Set<_Entry>();
  // Set at a forced drain: the runtime's cancels after it are the drain's (on Node and Bun
  // closeAll cuts the connection before forceAll runs; its reason read "the client
  // disconnected" to a route telling the two apart — a review).
  let forced: { reason: unknown } | undefined;
  return {
    track(res, onEnd) {
      const source = res.body;
      if (source === null) {
        onEnd();
        return res;
      }
      let reader: ReadableStreamDefaultReader<Uint8Array>;
      try {
        reader = source.getReader();
      } catch {
        // Already locked or used: the runtime will refuse it as it would have anyway.
        onEnd();
        return res;
      }
      let ended = false;
      let out!: ReadableStreamDefaultController<Uint8Array>;
      const entry: _Entry = {
        force(reason) {
          end({ reason, clientLeft: false });
          out.error(reason);
          reader.cancel(reason).catch(() => {});
        },
      };
      const end = (cut?: { reason: unknown; clientLeft: boolean }) => {
        if (ended) return;
        ended = true;
        open.delete(entry);
        onEnd(cut);
      };
      open.add(entry);
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          out = controller;
        },
        async pull(controller) {
          try {
            const { done, value } = await reader.read();
            if (ended) return;
            if (done) {
              end();
              controller.close();
            } else controller.enqueue(value);
          } catch (error) {
            if (ended) return;
            end();
            controller.error(error);
          }
        },
        cancel(reason) {
          end(forced === undefined ? { reason, clientLeft: true } : { reason: forced.reason, clientLeft: false });
          return reader.cancel(reason);
        },
      }, { highWaterMark: 0 });
      return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
    },
    forcing(reason) {
      forced ??= { reason };
    },
    forceAll(reason) {
      for (const entry of [...open]) entry.force(reason);
    },
    get size() {
      return open.size;
    },
  };
}
