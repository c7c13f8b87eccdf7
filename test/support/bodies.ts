// Request bodies whose reads the tests can count.

export interface CountingSource {
  readonly stream: ReadableStream<Uint8Array>;
  /** Chunks pulled from the source so far. */
  readonly pulls: number;
  /** Whether the consumer cancelled the source (so no more is read from the "socket"). */
  readonly cancelled: boolean;
}

/** A body of `chunks` chunks of `size` bytes, pulled one at a time. */
export function countingBody(chunks: number, size: number): CountingSource {
  let pulls = 0;
  let cancelled = false;
  const stream = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        if (pulls >= chunks) return controller.close();
        pulls++;
        controller.enqueue(new Uint8Array(size).fill(97));
      },
      cancel() {
        cancelled = true;
      },
    },
    { highWaterMark: 0 },
  );
  return {
    stream,
    get pulls() {
      return pulls;
    },
    get cancelled() {
      return cancelled;
    },
  };
}

/** A POST carrying `body` with the given headers. */
export function post(body: BodyInit, headers: Record<string, string> = {}, url = "http://localhost/upload"): Request {
  return new Request(url, { method: "POST", body, headers, duplex: "half" } as RequestInit);
}
