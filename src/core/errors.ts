// Typed errors with stable codes. Each carries a brand under Symbol.for(), so the is*()
// guards hold even when two copies of the package meet in one process (instanceof would not).

const BRAND: unique symbol = Symbol.for("serve-hygiene.error") as never;

/** The base of every error this library throws or hands to a hook. */
export class HygieneError extends Error {
  /** A stable, documented identifier: match on it, not on the message. */
  readonly code: string;
  readonly [BRAND] = true;

  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = new.target.name;
  }
}

/** Whether `error` is any serve-hygiene error, from this copy of the package or another. */
export function isHygieneError(error: unknown): error is HygieneError {
  return typeof error === "object" && error !== null && (error as { [BRAND]?: unknown })[BRAND] === true;
}

/** A guard for one error code; the building block of every `isXxxError()`. */
export function _hasCode<E extends HygieneError>(error: unknown, code: string): error is E {
  return isHygieneError(error) && error.code === code;
}
