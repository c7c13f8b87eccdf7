import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { createManualClock } from "../../src/testing/manual_clock.ts";

describe("manual clock", () => {
  test("manual clock: time stands still until advanced", () => {
    const clock = createManualClock(500);
    assert.equal(clock.now(), 500);
    clock.advance(250);
    assert.equal(clock.now(), 750);
  });

  test("manual clock: timers fire in due order, ties in scheduling order, reading their due time", () => {
    const clock = createManualClock();
    const seen: string[] = [];
    clock.setTimeout(() => seen.push(`b@${clock.now()}`), 20);
    clock.setTimeout(() => seen.push(`a@${clock.now()}`), 10);
    clock.setTimeout(() => seen.push(`c@${clock.now()}`), 20);
    clock.advance(19);
    assert.deepEqual(seen, ["a@10"]);
    clock.advance(1);
    assert.deepEqual(seen, ["a@10", "b@20", "c@20"]);
    assert.equal(clock.pendingTimers, 0);
  });

  test("manual clock: a cancelled timer never fires", () => {
    const clock = createManualClock();
    let fired = false;
    const t = clock.setTimeout(() => (fired = true), 5);
    assert.equal(clock.pendingTimers, 1);
    t.cancel();
    t.cancel();
    clock.advance(10);
    assert.equal(fired, false);
    assert.equal(clock.pendingTimers, 0);
  });

  test("manual clock: a timer scheduled by a timer fires within the same advance when due", () => {
    const clock = createManualClock();
    const seen: number[] = [];
    clock.setTimeout(() => clock.setTimeout(() => seen.push(clock.now()), 5), 5);
    clock.advance(10);
    assert.deepEqual(seen, [10]);
  });

  test("manual clock: an interval fires once per period until cancelled", () => {
    const clock = createManualClock();
    let n = 0;
    const t = clock.setInterval(() => n++, 100);
    clock.advance(350);
    assert.equal(n, 3);
    t.cancel();
    clock.advance(1000);
    assert.equal(n, 3);
  });

  test("manual clock: advancing by a negative or fractional amount throws", () => {
    const clock = createManualClock();
    assert.throws(() => clock.advance(-1), RangeError);
    assert.throws(() => clock.advance(0.5), RangeError);
  });
});
