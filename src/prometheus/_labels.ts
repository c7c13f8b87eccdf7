// Label hygiene for the exporter: every label value comes from the library's vocabulary
// or configuration, and even so each label admits a bounded number of distinct values, so
// a misuse (a caller putting a client key into a scope name) shows up as one overflow
// series instead of a series explosion.

/** Label values from configuration (scope, class, reason, source) are capped per label. */
const MAX_LABEL_VALUES = 64;
/** The value every label value past the cap is counted under. */
const OVERFLOW = "_other";

/** A label that admits the values it has seen plus at most MAX_LABEL_VALUES new ones. */
export function _capped(): (value: unknown) => string {
  const seen = new Set<string>();
  return (value) => {
    // "": the event does not say (an unnamed limiter, an unscoped limiter) — a Prometheus
    // empty label value, which queries treat as the label being absent.
    const text = typeof value === "string" ? value : "";
    if (seen.has(text)) return text;
    if (seen.size >= MAX_LABEL_VALUES) return OVERFLOW;
    seen.add(text);
    return text;
  };
}
