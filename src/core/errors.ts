// Typed errors with stable codes. Each carries a brand under Symbol.for(), so the is*()
// guards hold even when two copies of the package meet in one process (instanceof would not).

const BRAND: unique symbol = Symbol.for("serve-hygiene.error") as never;

/** The base of this library's typed errors (a bad option is a plain TypeError or RangeError). */
export class HygieneError extends Error {
  /** A stable, documented identifier: match on it, not on the message. */
  readonly code: string;
  readonly [BRAND] = true;

  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    // A literal, not the class's own name: a minifier renames classes (each subclass of ours
    // sets its own the same way; a user's subclass keeps its own class's name).
    this.name = new.target === HygieneError ? "HygieneError" : new.target.name;
  }
}

/** Whether `error` is any serve-hygiene error, from this copy of the package or another. */
export function isHygieneError(error: unknown): error is HygieneError {
  if (typeof error !== "object" || error === null) return false;
  // A value whose property reads throw (a revoked Proxy, a throwing getter) is none: thrown by
  // a handler, the throw escaped the guard and ended the process (a review).
  try {
    return (error as { [BRAND]?: unknown })[BRAND] === true;
  } catch {
    return false;
  }
}

/**
 * Every code an error of this library carries (a user's own `HygieneError` may carry another).
 * `ERR_FLOW_QUEUE_FULL` keeps the prefix it shipped with: codes are stable.
 */
export type HygieneErrorCode = "RATE_LIMITED" | "PEER_BUSY" | "BODY_TOO_LARGE" | "ERR_FLOW_QUEUE_FULL" | "SERVE_IO" | "SERVE_FLUSH";

/**
 * A guard for one error code; the building block of every `isXxxError()`. `field`: a number
 * the class always sets (a base `HygieneError` made with the same code is not one of them).
 */
export function _hasCode<E extends HygieneError>(error: unknown, code: HygieneErrorCode, field?: string): error is E {
  return isHygieneError(error) && error.code === code && (field === undefined || typeof (error as unknown as Record<string, unknown>)[field] === "number");
}

/**
 * Gives an error the guard puts into a route (its signal's reason at the deadline, a forced
 * drain or the client leaving; the body cap's error) the answer it stands for, as
 * `getResponse()` — the shape Hono's default error handler answers with instead of logging the
 * error: a route that follows its signal (as it should) or reads a capped body printed a stack
 * a request, which any client could cause. The guard's own answer stays what is sent.
 */
export function _answering<E extends object>(error: E, status: number): E {
  Object.defineProperty(error, "getResponse", { value: () => new Response(null, { status }), enumerable: false, configurable: true });
  return error;
}
