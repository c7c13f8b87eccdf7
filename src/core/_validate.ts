// Argument checks shared by the core's factories. Messages follow one form so a
// misconfiguration reads the same wherever it is caught:
//   Cannot create limiter as "limit" must be a positive integer: current value is 0

/** Formats a value for an error message: strings quoted, everything else as String(). */
export function _show(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value);
  if (typeof value === "bigint") return `${value}n`;
  if (typeof value === "symbol") return value.toString();
  if (typeof value === "object" && value !== null) return Object.prototype.toString.call(value);
  return String(value);
}

export function _fail(what: string, field: string, rule: string, value: unknown): never {
  throw new RangeError(`Cannot ${what} as "${field}" must be ${rule}: current value is ${_show(value)}`);
}

/** A positive integer, or Infinity meaning "uncapped". */
export function _positiveIntOrInfinity(what: string, field: string, value: unknown): number {
  if (typeof value !== "number" || !(value === Infinity || (Number.isSafeInteger(value) && value > 0))) {
    _fail(what, field, "a positive integer or Infinity", value);
  }
  return value;
}

/** A positive integer (finite). */
export function _positiveInt(what: string, field: string, value: unknown): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value <= 0) {
    _fail(what, field, "a positive integer", value);
  }
  return value;
}

/** Zero or a positive integer (finite). */
export function _nonNegativeInt(what: string, field: string, value: unknown): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) {
    _fail(what, field, "a non-negative integer", value);
  }
  return value;
}

/**
 * The longest delay a timer takes: Node replaces a delay of 2^31 ms or more by 1 ms (with a
 * TimeoutOverflowWarning), so a longer duration would fire at once instead of late.
 */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * A duration in milliseconds: a safe integer from `min` (1 unless `zero`) up to
 * {@linkcode MAX_TIMER_MS}, or `Infinity` where `infinity` allows it ("never"). Every duration
 * option of the library goes through this one check.
 */
export function _durationMs(
  what: string,
  field: string,
  value: unknown,
  { zero = false, infinity = false }: { zero?: boolean; infinity?: boolean } = {},
): number {
  if (infinity && value === Infinity) return value;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < (zero ? 0 : 1)) {
    _fail(what, field, `${zero ? "a non-negative" : "a positive"} integer${infinity ? " or Infinity" : ""}`, value);
  }
  if (value > MAX_TIMER_MS) {
    _fail(what, field, `at most ${MAX_TIMER_MS} ms (2^31 - 1, the longest timer delay)${infinity ? " or Infinity" : ""}`, value);
  }
  return value;
}

/** An options argument: undefined (use defaults) or a plain object. */
export function _options<T extends object>(what: string, value: T | undefined): Partial<T> {
  if (value === undefined) return {};
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new TypeError(`Cannot ${what} as the options must be an object: current value is ${_show(value)}`);
  }
  return value;
}

/**
 * The option's value, or `fallback` when it was left out. Only `undefined` means "left
 * out": `null` is a value, and the validator it is passed to refuses it.
 */
export function _given<T, D>(value: T | undefined, fallback: D): T | D {
  return value === undefined ? fallback : value;
}

/** A nested options object (`boolean` shorthands are handled by the caller). */
export function _object<T>(what: string, field: string, value: T): T {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new TypeError(`Cannot ${what} as "${field}" must be an object: current value is ${_show(value)}`);
  }
  return value;
}

/** A function option, or undefined when it was left out. */
export function _optionalFunction<T>(what: string, field: string, value: T | undefined): T | undefined {
  if (value !== undefined && typeof value !== "function") {
    throw new TypeError(`Cannot ${what} as "${field}" must be a function: current value is ${_show(value)}`);
  }
  return value;
}
