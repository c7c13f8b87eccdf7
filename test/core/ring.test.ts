import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { Ring } from "../../src/core/ring.ts";

describe("ring", () => {
  test("ring: push returns undefined until full, then the evicted oldest item", () => {
    const ring = new Ring<number>(3);
    assert.equal(ring.push(1), undefined);
    assert.equal(ring.push(2), undefined);
    assert.equal(ring.push(3), undefined);
    assert.equal(ring.push(4), 1);
    assert.equal(ring.push(5), 2);
    assert.deepEqual(ring.toArray(), [3, 4, 5]);
    assert.equal(ring.length, 3);
  });

  test("ring: never holds more than its capacity", () => {
    const ring = new Ring<number>(4);
    for (let i = 0; i < 1000; i++) {
      ring.push(i);
      assert.ok(ring.length <= 4);
      assert.equal(ring.size.value, ring.length);
    }
    assert.deepEqual([...ring], [996, 997, 998, 999]);
  });

  test("ring: capacity 0 is disabled: nothing is stored, the item is handed straight back", () => {
    const ring = new Ring<string>(0);
    const item = "x";
    assert.equal(ring.push(item), item);
    assert.equal(ring.length, 0);
    assert.deepEqual(ring.toArray(), []);
    assert.equal(ring.size.value, 0);
  });

  test("ring: an evicted undefined item is still handed back as undefined", () => {
    const ring = new Ring<number | undefined>(1);
    ring.push(undefined);
    assert.equal(ring.push(1), undefined);
    assert.deepEqual(ring.toArray(), [1]);
  });

  test("ring: clear empties it and the gauge", () => {
    const ring = new Ring<number>(2);
    ring.push(1);
    ring.push(2);
    ring.clear();
    assert.equal(ring.length, 0);
    assert.equal(ring.size.value, 0);
    assert.equal(ring.push(3), undefined);
    assert.deepEqual(ring.toArray(), [3]);
  });

  test("ring: a negative, fractional or non-number capacity throws a RangeError", () => {
    for (const bad of [-1, 1.5, NaN, Infinity, "3"]) {
      assert.throws(() => new Ring(bad as number), /Cannot create ring as "capacity" must be a non-negative integer/);
    }
  });
});
