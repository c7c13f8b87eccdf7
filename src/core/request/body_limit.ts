import { HygieneError, _answering, _hasCode } from "../errors.ts";

/** Thrown into the body stream (and so into whatever reads it) once the cap is passed. */
export class BodyTooLargeError extends HygieneError {
  declare readonly code: "BODY_TOO_LARGE";
  /** The cap that was passed, in bytes. */
  readonly limit: number;
  constructor(limit: number) {
    super("BODY_TOO_LARGE", `Request body exceeds the limit of ${limit} bytes`);
    this.name = new.target === BodyTooLargeError ? "BodyTooLargeError" : new.target.name;
    this.limit = limit;
    _answering(this, 413);
  }
}

/** Whether `error` is a {@linkcode BodyTooLargeError} (from any copy of the package). */
export function isBodyTooLargeError(error: unknown): error is BodyTooLargeError {
  return _hasCode(error, "BODY_TOO_LARGE", "limit");
}

/** What the framing headers say about the body's length. */
export type DeclaredLength =
  /** No usable length: none sent, or Transfer-Encoding present (the length is then ignored). */
  | { readonly kind: "unknown" }
  | { readonly kind: "length"; readonly bytes: number }
  /** Non-digits, negative, empty, above 2^53 - 1, or several differing values: answer 400. */
  | { readonly kind: "malformed" };

const UNKNOWN: DeclaredLength = Object.freeze({ kind: "unknown" });
const MALFORMED: DeclaredLength = Object.freeze({ kind: "malformed" });
const DIGITS = /^[0-9]+$/;

/**
 * Reads `Content-Length` strictly. Repeated identical values collapse to one (RFC 9110
 * §8.6); anything else that is not a plain decimal integer up to 2^53 - 1 is malformed.
 * With `Transfer-Encoding` present the length is ignored and the body must be counted.
 *
 * @example
 * ```ts
 * import { declaredLength } from "./body_limit.ts";
 * console.assert(declaredLength(new Headers({ "content-length": "abc" })).kind === "malformed");
 * ```
 */
export function declaredLength(headers: Headers): DeclaredLength {
  const raw = headers.get("content-length");
  if (raw === null || headers.has("transfer-encoding")) return UNKNOWN;
  let bytes: number | undefined;
  for (const part of raw.split(",")) {
    const value = part.trim();
    if (!DIGITS.test(value)) return MALFORMED;
    const n = Number(value);
    if (!Number.isSafeInteger(n) || (bytes !== undefined && n !== bytes)) return MALFORMED;
    bytes = n;
  }
  return { kind: "length", bytes: bytes! };
}

/** Options of {@linkcode limitBody}. */
export interface LimitBodyOptions {
  /** The cap in bytes, read when the body is first read (so a route that lowered it is seen); undefined = no cap. */
  limit: () => number | undefined;
  /** The declared length, checked against the cap before a byte is read. */
  declared?: DeclaredLength | undefined;
  /** Told once when the cap is passed, before the stream errors. */
  onOverflow?: ((error: BodyTooLargeError) => void) | undefined;
  /** Told once when the body has been read to its end. */
  onEnd?: (() => void) | undefined;
  /** Told as each read of the source starts, and as it ends (bytes, the end, or a failure). */
  onRead?: { start(): void; end(): void } | undefined;
  /** Told once, when the body is first read and the declared length is within the cap. */
  onFirstRead?: (() => void) | undefined;
  /**
   * Told when reading the source body failed (the connection broke: the client left mid-body);
   * what it returns, if anything, is the reason the read fails with instead of the runtime's.
   */
  onSourceError?: ((error: unknown) => unknown) | undefined;
  /**
   * Receives a function that fails the stream with a reason (the request was abandoned: a
   * deadline, a forced drain): a pending read rejects at once and the source is cancelled,
   * so a handler blocked on a trickling body is released.
   */
  bindFail?: ((fail: (reason: unknown) => void) => void) | undefined;
}

/**
 * Wraps a body stream so it can never deliver more than the cap. A declared length over
 * the cap errors the stream before a byte is read; otherwise bytes are counted as they are
 * read, and the chunk that would pass the cap is never handed on: the stream errors with a
 * {@linkcode BodyTooLargeError} and the source is cancelled, so no more is read from the
 * socket. Nothing is read ahead of the consumer (high-water mark 0): the wrapper buffers
 * nothing.
 *
 * @example
 * ```ts
 * import { isBodyTooLargeError } from "serve-hygiene";
 * import { limitBody } from "./body_limit.ts";
 * const body = new Response("0123456789").body!;
 * const limited = limitBody(body, { limit: () => 4 });
 * const err = await new Response(limited).text().catch((e) => e);
 * console.assert(isBodyTooLargeError(err));
 * ```
 */
export function limitBody(body: ReadableStream<Uint8Array>, options: LimitBodyOptions): ReadableStream<Uint8Array> {
  let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  let cap: number | undefined;
  let seen = 0;
  let failed = false;
  const fail = (controller: ReadableStreamDefaultController<Uint8Array>, reason: unknown) => {
    if (failed) return;
    failed = true;
    controller.error(reason);
    (reader ?? body).cancel(reason).catch(() => {});
  };
  const overflow = (controller: ReadableStreamDefaultController<Uint8Array>, limit: number) => {
    if (failed) return;
    const error = new BodyTooLargeError(limit);
    options.onOverflow?.(error);
    fail(controller, error);
  };
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        options.bindFail?.((reason) => fail(controller, reason));
      },
      async pull(controller) {
        if (reader === undefined) {
          cap = options.limit();
          const declared = options.declared;
          if (cap !== undefined && declared?.kind === "length" && declared.bytes > cap) return overflow(controller, cap);
          reader = body.getReader();
          options.onFirstRead?.();
        }
        let next: Awaited<ReturnType<typeof reader.read>>;
        const onRead = options.onRead;
        onRead?.start();
        try {
          next = await reader.read();
        } catch (error) {
          throw (failed ? undefined : options.onSourceError?.(error)) ?? error;
        } finally {
          onRead?.end();
        }
        const { done, value } = next;
        if (failed) return; // failed while the read was pending: the consumer already knows
        if (done) {
          options.onEnd?.();
          return controller.close();
        }
        seen += value.byteLength;
        if (cap !== undefined && seen > cap) return overflow(controller, cap);
        controller.enqueue(value);
      },
      cancel(reason) {
        return (reader ?? body).cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
}
