// The bounded per-key count table of the in-flight limiter, over the shared key table
// (_key_table.ts). Not re-exported.
//
// A key's count lives in a box, so a hot key costs one lookup to take a slot and none to
// give it back (the slot keeps the box). A box back at 0 stays in the table until the table
// fills: deleting and re-inserting a key on every request makes a Map rehash over and over
// (measured: up to 700 ns a request on Node, 30–200 ns elsewhere). Instead it is announced
// as a candidate, and an unseen key at the cap pops candidates until one is still at 0:
// amortised O(1), and an unseen key is refused only when every held key has work in flight.
// The size gauge counts only keys with a count above 0.
import { createSizeGauge, type SizeGauge } from "../size_gauge.ts";
import { _heldKey, _KeyTable } from "./_key_table.ts";

/** One key's count. A box above 0 is never dropped, so a holder may keep it. */
export interface _Count {
  n: number;
  readonly key: string;
  /** Requests over the key's cap waiting for one of its slots (newest last). */
  waiters: unknown[] | undefined;
}

export class _KeyCounts {
  readonly #table: _KeyTable<_Count>;
  readonly #size;
  #active = 0;

  constructor(maxKeys: number) {
    this.#table = new _KeyTable<_Count>(maxKeys, (box) => (box.n > 0 ? Infinity : -Infinity));
    this.#size = createSizeGauge(maxKeys);
  }

  get gauge(): SizeGauge {
    return this.#size.gauge;
  }

  count(key: string): number {
    return this.#table.get(key)?.n ?? 0;
  }

  box(key: string): _Count | undefined {
    return this.#table.get(key);
  }

  /**
   * Adds one to `key`'s count: its box, or "peer-busy" at `perKey`, or "busy" when the table
   * is full of keys with work in flight. Throws on a corrupt count (after resetting it).
   */
  add(key: string, perKey: number): _Count | "peer-busy" | "busy" {
    const box = this.#table.get(key);
    if (box === undefined) {
      if (!this.#table.makeRoom(0)) return "busy";
      // The name it is held under: a long key's digest, not the key (held for the box's life).
      const fresh: _Count = { n: 1, key: _heldKey(key), waiters: undefined };
      this.#table.set(key, fresh);
      this.#size.set(++this.#active);
      return fresh;
    }
    const n = box.n;
    if (!(n >= 0)) {
      box.n = 0; // counting restarts from the slots taken from now on
      this.#table.candidate(key);
      this.#size.set((this.#active = Math.max(0, this.#active - 1)));
      throw new TypeError("An in-flight count was corrupt; the request was refused");
    }
    if (n >= perKey) return "peer-busy";
    box.n = n + 1;
    if (n === 0) this.#size.set(++this.#active);
    return box;
  }

  /** Takes one from a box `add` returned. */
  remove(box: _Count): void {
    if (!(box.n > 0)) return;
    if (--box.n === 0) {
      this.#table.candidate(box.key);
      this.#size.set(--this.#active);
    }
  }
}
