import type { Clock } from "./clock.ts";
import { systemClock } from "./clock.ts";
import { createSizeGauge, type SizeGauge, type SizeGaugeWriter } from "./size_gauge.ts";
import { _durationMs, _nonNegativeInt, _options } from "./_validate.ts";

/** Options of {@linkcode BoundedMap}. */
export interface BoundedMapOptions {
  /**
   * Entries neither written nor read for this long are dropped by the inline sweep (and
   * read as absent). Undefined means entries never expire by idleness.
   * @default undefined
   */
  idleTtlMs?: number;
  /** Time source for idleness. @default systemClock */
  clock?: Clock;
}

/** How many `set` calls pass between two inline idle sweeps. */
export const SWEEP_EVERY = 256;

interface _Slot<V> {
  value: V;
  touched: number;
}

/**
 * A Map with a hard capacity. When full, inserting a new key evicts the oldest *insert*
 * (not the least recently used) and returns it. Re-inserting a key moves it to newest;
 * `get` refreshes the key's idle timestamp but does not reorder. With `idleTtlMs`, a sweep
 * runs inline every {@linkcode SWEEP_EVERY} inserts and drops entries idle past the TTL —
 * there is no background timer. Capacity 0 means disabled: nothing is stored.
 *
 * Two caveats follow from the design, on purpose:
 * - a key read constantly but never rewritten keeps its insertion position, so it can be
 *   evicted before a colder key that was inserted later;
 * - a map that stops taking inserts stops sweeping: idle entries stay (and count in
 *   `size`) until the next inserts, though `get` already reads them as absent.
 *
 * @example
 * ```ts
 * import { BoundedMap } from "serve-hygiene";
 * const map = new BoundedMap<string, number>(2);
 * map.set("a", 1);
 * map.set("b", 2);
 * const evicted = map.set("c", 3);
 * console.assert(evicted?.[0] === "a" && !map.has("a"));
 * ```
 */
export class BoundedMap<K, V> implements Iterable<[K, V]> {
  readonly capacity: number;
  readonly idleTtlMs: number | undefined;
  readonly #clock: Clock;
  readonly #map = new Map<K, _Slot<V>>();
  readonly #size: SizeGaugeWriter;
  #inserts = 0;

  constructor(capacity: number, options?: BoundedMapOptions) {
    const what = "create bounded map";
    const o = _options(what, options);
    this.capacity = _nonNegativeInt(what, "capacity", capacity);
    this.idleTtlMs = o.idleTtlMs === undefined ? undefined : _durationMs(what, "idleTtlMs", o.idleTtlMs);
    this.#clock = o.clock ?? systemClock;
    this.#size = createSizeGauge(capacity);
  }

  /**
   * Inserts or replaces `key`, making it the newest insert. Returns the entry evicted to
   * make room, if any; with capacity 0 the entry itself is handed back.
   */
  set(key: K, value: V): [K, V] | undefined {
    if (this.capacity === 0) return [key, value];
    const now = this.#clock.now();
    if (this.idleTtlMs !== undefined && ++this.#inserts % SWEEP_EVERY === 0) this.#sweep(now);
    let evicted: [K, V] | undefined;
    if (!this.#map.delete(key) && this.#map.size >= this.capacity) {
      const oldest = this.#map.entries().next().value as [K, _Slot<V>];
      this.#map.delete(oldest[0]);
      evicted = [oldest[0], oldest[1].value];
    }
    this.#map.set(key, { value, touched: now });
    this.#size.set(this.#map.size);
    return evicted;
  }

  /** The value of `key`, refreshing its idle timestamp; undefined when absent or idle past the TTL. */
  get(key: K): V | undefined {
    const slot = this.#map.get(key);
    if (slot === undefined) return undefined;
    const now = this.#clock.now();
    if (this.idleTtlMs !== undefined && now - slot.touched > this.idleTtlMs) return undefined;
    slot.touched = now;
    return slot.value;
  }

  /** Whether `key` is stored (idle or not); does not refresh it. */
  has(key: K): boolean {
    return this.#map.has(key);
  }

  /** Removes `key`; returns whether it was there. */
  delete(key: K): boolean {
    const had = this.#map.delete(key);
    if (had) this.#size.set(this.#map.size);
    return had;
  }

  /** Removes every entry for which `drop` returns true; returns how many went. */
  prune(drop: (value: V, key: K) => boolean): number {
    return this.#dropWhere((slot, key) => drop(slot.value, key));
  }

  #dropWhere(drop: (slot: _Slot<V>, key: K) => boolean): number {
    let dropped = 0;
    for (const [key, slot] of this.#map) {
      if (drop(slot, key)) {
        this.#map.delete(key);
        dropped++;
      }
    }
    if (dropped > 0) this.#size.set(this.#map.size);
    return dropped;
  }

  /** Drops every entry. */
  clear(): void {
    this.#map.clear();
    this.#size.set(0);
  }

  /** Entries stored now. */
  get length(): number {
    return this.#map.size;
  }

  /** The live size, for metrics. */
  get size(): SizeGauge {
    return this.#size.gauge;
  }

  /** Oldest insert first. */
  *[Symbol.iterator](): Iterator<[K, V]> {
    for (const [key, slot] of this.#map) yield [key, slot.value];
  }

  #sweep(now: number): void {
    const ttl = this.idleTtlMs!;
    this.#dropWhere((slot) => now - slot.touched > ttl);
  }
}
