import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { BoundedMap, SWEEP_EVERY } from "../../src/core/bounded_map.ts";
import { createManualClock } from "../../src/core/manual_clock.ts";

describe("bounded map", () => {
  test("bounded map: when full, inserting evicts the oldest insert and returns it", () => {
    const map = new BoundedMap<string, number>(2);
    assert.equal(map.set("a", 1), undefined);
    assert.equal(map.set("b", 2), undefined);
    assert.deepEqual(map.set("c", 3), ["a", 1]);
    assert.equal(map.has("a"), false);
    assert.deepEqual([...map], [["b", 2], ["c", 3]]);
    assert.equal(map.size.value, 2);
  });

  test("bounded map: eviction is by insert order, not LRU — get does not reorder", () => {
    const map = new BoundedMap<string, number>(2);
    map.set("a", 1);
    map.set("b", 2);
    assert.equal(map.get("a"), 1);
    assert.deepEqual(map.set("c", 3), ["a", 1]);
  });

  test("bounded map: re-inserting a key moves it to newest without evicting", () => {
    const map = new BoundedMap<string, number>(2);
    map.set("a", 1);
    map.set("b", 2);
    assert.equal(map.set("a", 10), undefined);
    assert.deepEqual(map.set("c", 3), ["b", 2]);
    assert.deepEqual([...map], [["a", 10], ["c", 3]]);
  });

  test("bounded map: caveat — a key read constantly but never rewritten is evicted before a colder later insert", () => {
    const map = new BoundedMap<string, number>(2);
    map.set("hot", 1);
    map.set("cold", 2);
    for (let i = 0; i < 100; i++) map.get("hot");
    assert.deepEqual(map.set("new", 3), ["hot", 1]);
    assert.equal(map.has("cold"), true);
  });

  test("bounded map: capacity 0 is disabled: nothing is stored, the entry is handed back", () => {
    const map = new BoundedMap<string, number>(0);
    assert.deepEqual(map.set("a", 1), ["a", 1]);
    assert.equal(map.get("a"), undefined);
    assert.equal(map.length, 0);
    assert.equal(map.size.value, 0);
  });

  test(`bounded map: the idle sweep runs inline on every ${SWEEP_EVERY}th insert and drops entries idle past the TTL`, () => {
    const clock = createManualClock();
    const map = new BoundedMap<string, number>(10_000, { idleTtlMs: 1000, clock });
    map.set("idle", 0);
    map.set("kept", 0);
    clock.advance(600);
    map.get("kept"); // refreshed: idle 401 ms at the sweep, under the TTL
    clock.advance(401); // "idle" is now 1001 ms idle
    for (let i = 2; i < SWEEP_EVERY - 1; i++) map.set(`k${i}`, i);
    assert.equal(map.has("idle"), true, "no sweep before the 256th insert");
    map.set("k-last", 0); // the 256th insert
    assert.equal(map.has("idle"), false);
    assert.equal(map.has("kept"), true);
    assert.equal(map.size.value, map.length);
  });

  test("bounded map: caveat — a map that stops taking inserts stops sweeping", () => {
    const clock = createManualClock();
    const map = new BoundedMap<string, number>(100, { idleTtlMs: 10, clock });
    for (let i = 0; i < 50; i++) map.set(`k${i}`, i);
    clock.advance(1_000_000);
    assert.equal(map.length, 50, "idle entries stay stored with no inserts to sweep them");
    assert.equal(map.size.value, 50);
    assert.equal(map.get("k0"), undefined, "but they read as absent");
  });

  test("bounded map: get refreshes the idle timestamp", () => {
    const clock = createManualClock();
    const map = new BoundedMap<string, number>(10, { idleTtlMs: 100, clock });
    map.set("a", 1);
    for (let i = 0; i < 10; i++) {
      clock.advance(90);
      assert.equal(map.get("a"), 1);
    }
    clock.advance(101);
    assert.equal(map.get("a"), undefined);
  });

  test("bounded map: prune drops what the predicate picks and updates the gauge", () => {
    const map = new BoundedMap<string, number>(10);
    for (let i = 0; i < 6; i++) map.set(`k${i}`, i);
    assert.equal(map.prune((v) => v % 2 === 0), 3);
    assert.deepEqual([...map].map(([k]) => k), ["k1", "k3", "k5"]);
    assert.equal(map.size.value, 3);
    assert.equal(map.delete("k1"), true);
    assert.equal(map.delete("k1"), false);
    assert.equal(map.size.value, 2);
    map.clear();
    assert.equal(map.size.value, 0);
  });

  test("bounded map: never holds more than its capacity", () => {
    const map = new BoundedMap<number, number>(64);
    for (let i = 0; i < 10_000; i++) {
      map.set(i, i);
      assert.ok(map.length <= 64);
    }
  });

  test("bounded map: bad capacity or TTL throws", () => {
    assert.throws(() => new BoundedMap(-1), /Cannot create bounded map as "capacity" must be a non-negative integer: current value is -1/);
    assert.throws(() => new BoundedMap(1, { idleTtlMs: 0 }), /"idleTtlMs" must be a positive integer: current value is 0/);
    assert.throws(() => new BoundedMap(1, 5 as never), TypeError);
  });
});
