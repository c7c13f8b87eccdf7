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

/**
 * Every option an options type has, its optional ones too: written as this record, a key the
 * type lacks, or one left out, fails to compile, so the list stays the type's.
 */
export type _KeyList<T> = { readonly [K in keyof Required<T>]: true };

/**
 * An options argument: undefined (use defaults) or a plain object; with `known`, one whose
 * every key is an option (see {@linkcode _onlyKnown}).
 */
export function _options<T extends object>(what: string, value: T | undefined, known?: _KeyList<T>): Partial<T> {
  if (value === undefined) return {};
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new TypeError(`Cannot ${what} as the options must be an object: current value is ${_show(value)}`);
  }
  if (known !== undefined) _onlyKnown(what, value, known);
  return value;
}

/**
 * Refuses a key of `value` that `known` does not list, naming the nearest option. A misspelled
 * option (`shedWaitMS`, `bodyLimit`, a runtime's own `signal`) was ignored, and the bound it was
 * meant to set silently kept its default (a review). `field`: where a nested object sits.
 */
export function _onlyKnown<T>(what: string, value: T, known: Readonly<Record<string, true>>, field?: string): T {
  // Not an object: its own check says what is wrong with it.
  if (typeof value !== "object" || value === null) return value;
  for (const key of Object.keys(value)) {
    // One left undefined sets nothing (a config object spread in whole may carry such keys).
    if (Object.hasOwn(known, key) || (value as Record<string, unknown>)[key] === undefined) continue;
    const near = _nearest(key, Object.keys(known));
    const name = field === undefined ? key : `${field}.${key}`;
    throw new TypeError(`Cannot ${what} as "${name}" is not an option${near === undefined ? "" : ` (did you mean "${near}"?)`}`);
  }
  return value;
}

/** The option `key` was most likely meant to be: the same but for case, one it begins, or one a typo or two away. */
function _nearest(key: string, options: readonly string[]): string | undefined {
  const lower = key.toLowerCase();
  const same = options.find((o) => o.toLowerCase() === lower) ?? options.find((o) => o.toLowerCase().startsWith(lower) && lower.length >= 4);
  if (same !== undefined) return same;
  let best: string | undefined;
  let bestDistance = Math.min(3, Math.ceil(key.length / 3));
  for (const o of options) {
    const d = _distance(lower, o.toLowerCase());
    if (d <= bestDistance) [best, bestDistance] = [o, d - 1];
  }
  return best;
}

/**
 * Edit distance, two letters swapped counting as one typo (`kye`, `brust`); options are short:
 * the quadratic table is a few hundred cells.
 */
function _distance(a: string, b: string): number {
  let before: number[] = [];
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) row[j] = Math.min(row[j]!, before[j - 2]! + 1);
    }
    [before, prev] = [prev, row];
  }
  return prev[b.length]!;
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

/** A boolean option, or undefined when it was left out (a string "false" is no boolean: it is truthy). */
export function _optionalBoolean(what: string, field: string, value: unknown): boolean | undefined {
  if (value !== undefined && typeof value !== "boolean") {
    throw new TypeError(`Cannot ${what} as "${field}" must be a boolean: current value is ${_show(value)}`);
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
