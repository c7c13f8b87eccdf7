import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { createSizeGauge } from "../../src/core/size_gauge.ts";

describe("size gauge", () => {
  test("size gauge: readers see the owner's writes live", () => {
    const { gauge, set } = createSizeGauge(8);
    assert.equal(gauge.value, 0);
    set(5);
    assert.equal(gauge.value, 5);
    assert.equal(gauge.capacity, 8);
  });

  test("size gauge: a reader cannot write it", () => {
    const { gauge } = createSizeGauge(8);
    assert.throws(() => {
      (gauge as { value: number }).value = 3;
    }, TypeError);
    assert.throws(() => {
      (gauge as { capacity: number }).capacity = 3;
    }, TypeError);
    assert.equal(gauge.value, 0);
  });
});
