/**
 * The live size of a bounded collection: anything may read it (metrics, tests, health
 * pages); only the collection that owns it can write it.
 */
export interface SizeGauge {
  /** Entries held now. */
  readonly value: number;
  /** The most the collection will hold; 0 means disabled, Infinity unbounded. */
  readonly capacity: number;
}

/** What the owner keeps: the gauge it hands out, and the only way to change it. */
export interface SizeGaugeWriter {
  readonly gauge: SizeGauge;
  set(value: number): void;
}

/**
 * Creates a gauge and its writer. The owner keeps `set` and exposes `gauge`.
 *
 * @example
 * ```ts
 * import { createSizeGauge } from "./size_gauge.ts";
 * const { gauge, set } = createSizeGauge(10);
 * set(3);
 * console.assert(gauge.value === 3 && gauge.capacity === 10);
 * ```
 */
export function createSizeGauge(capacity: number): SizeGaugeWriter {
  let value = 0;
  const gauge: SizeGauge = Object.freeze({
    get value() {
      return value;
    },
    capacity,
  });
  return {
    gauge,
    set(next: number) {
      value = next;
    },
  };
}
