import { createSizeGauge, type SizeGauge, type SizeGaugeWriter } from "./size_gauge.ts";
import { _nonNegativeInt } from "./_validate.ts";

/**
 * A fixed-capacity, append-only buffer. When full, `push` evicts the oldest item and
 * returns it. Capacity 0 means disabled: nothing is stored and each pushed item is handed
 * straight back.
 *
 * @example Keeping the last three events
 * ```ts
 * import { Ring } from "serve-hygiene";
 * const ring = new Ring<number>(3);
 * for (const n of [1, 2, 3]) ring.push(n);
 * console.assert(ring.push(4) === 1);
 * console.assert([...ring].join() === "2,3,4");
 * ```
 */
export class Ring<T> implements Iterable<T> {
  readonly capacity: number;
  readonly #items: (T | undefined)[];
  readonly #size: SizeGaugeWriter;
  #head = 0; // index of the oldest item
  #count = 0;

  constructor(capacity: number) {
    this.capacity = _nonNegativeInt("create ring", "capacity", capacity);
    this.#items = new Array(capacity);
    this.#size = createSizeGauge(capacity);
  }

  /** Appends `item`; returns the item that fell out (the oldest), or undefined. */
  push(item: T): T | undefined {
    if (this.capacity === 0) return item;
    if (this.#count < this.capacity) {
      this.#items[(this.#head + this.#count) % this.capacity] = item;
      this.#size.set(++this.#count);
      return undefined;
    }
    const evicted = this.#items[this.#head];
    this.#items[this.#head] = item;
    this.#head = (this.#head + 1) % this.capacity;
    return evicted;
  }

  /** Items held now. */
  get length(): number {
    return this.#count;
  }

  /** The live size, for metrics. */
  get size(): SizeGauge {
    return this.#size.gauge;
  }

  /** Drops every item. */
  clear(): void {
    this.#items.fill(undefined);
    this.#head = 0;
    this.#count = 0;
    this.#size.set(0);
  }

  /** Oldest first. */
  *[Symbol.iterator](): Iterator<T> {
    for (let i = 0; i < this.#count; i++) yield this.#items[(this.#head + i) % this.capacity] as T;
  }

  /** Oldest first, as an array. */
  toArray(): T[] {
    return [...this];
  }
}
