// Validation of createPrometheusExporter's options, kept apart so the exporter file holds
// only the metric families. Messages follow the core's form:
//   Cannot create prometheus exporter as "prefix" must be … : current value is …
import type { Registry } from "prom-client";
import { _show } from "../core/mod.ts";

const WHAT = "create prometheus exporter";

/** A metric-name prefix: empty, or a name start with no colon (colons are for recording rules). */
const PREFIX = /^(?:[a-zA-Z_][a-zA-Z0-9_]*)?$/;

/**
 * Request durations in seconds: prom-client's defaults, plus 20 s (the default request
 * timeout) and 30 s so a timed-out request and a straggler past it land in distinct buckets.
 */
export const _DEFAULT_DURATION_BUCKETS: readonly number[] = Object.freeze([
  0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30,
]);

export function _typeError(what: string, field: string, rule: string, value: unknown): never {
  throw new TypeError(`Cannot ${what} as "${field}" must be ${rule}: current value is ${_show(value)}`);
}

/** `shown` replaces `_show(value)` where that would say nothing useful (an array). */
export function _rangeError(what: string, field: string, rule: string, value: unknown, shown = _show(value)): never {
  throw new RangeError(`Cannot ${what} as "${field}" must be ${rule}: current value is ${shown}`);
}

/** Duck-typed, not `instanceof`: a host's registry may come from another copy of prom-client. */
export function _registry(value: unknown): Registry | undefined {
  if (value === undefined) return undefined;
  const r = value as Partial<Registry> | null;
  if (typeof r !== "object" || r === null || typeof r.registerMetric !== "function" || typeof r.metrics !== "function") {
    _typeError(WHAT, "registry", "a prom-client Registry", value);
  }
  return value as Registry;
}

export function _prefix(value: unknown): string {
  if (value === undefined) return "serve_hygiene_";
  if (typeof value !== "string") _typeError(WHAT, "prefix", "a string", value);
  if (!PREFIX.test(value)) _rangeError(WHAT, "prefix", "empty or match /^[a-zA-Z_][a-zA-Z0-9_]*$/", value);
  return value;
}

export function _boolean(field: string, value: unknown, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== "boolean") _typeError(WHAT, field, "a boolean", value);
  return value;
}

export function _buckets(value: unknown): number[] {
  if (value === undefined) return [..._DEFAULT_DURATION_BUCKETS];
  if (!Array.isArray(value)) _typeError(WHAT, "durationBuckets", "an array of numbers", value);
  if (value.length === 0) _rangeError(WHAT, "durationBuckets", "a non-empty array", value, "[]");
  let previous = 0;
  for (const bound of value as unknown[]) {
    if (typeof bound !== "number" || !Number.isFinite(bound) || bound <= previous) {
      const shown = `[${value.map(_show).join(", ")}]`;
      _rangeError(WHAT, "durationBuckets", "finite positive seconds in increasing order", value, shown);
    }
    previous = bound;
  }
  return [...(value as number[])];
}

/** Every family the exporter registers, without the prefix (test/prometheus checks it against what a registry holds). */
const _FAMILIES = [
  "requests_in_flight",
  "denials_total",
  "rate_limit_denials_total",
  "request_duration_seconds",
  "stragglers",
  "concurrency_limit",
  "queue_waiting",
  "turn_waiting",
  "limiter_keys",
  "limiter_keys_capacity",
  "resident_memory_bytes",
  "memory_shedding",
  "event_loop_delay_seconds",
  "event_loop_busy",
  "admit_share",
  "drains_total",
  "faults_total",
  "store_transitions_total",
  "store_fallback",
];

/** Throws when a family name is already registered; checked before anything is registered. */
export function _unclaimed(registry: Registry, prefix: string): void {
  const taken = _FAMILIES.find((name) => registry.getSingleMetric(prefix + name) !== undefined);
  if (taken !== undefined) {
    _rangeError(WHAT, "prefix", `a prefix whose names are free in "registry" (${prefix + taken} is taken)`, prefix);
  }
}
