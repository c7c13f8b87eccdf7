import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { createSystemClock, systemClock } from "../../src/core/clock.ts";

describe("system clock", () => {
  test("system clock: now() is monotonic", () => {
    let last = systemClock.now();
    for (let i = 0; i < 1000; i++) {
      const t = systemClock.now();
      assert.ok(t >= last);
      last = t;
    }
  });

  test("system clock: unref is applied only when asked, and a cancelled timer never runs", async () => {
    const unrefd: unknown[] = [];
    const clock = createSystemClock({ unref: (id) => unrefd.push(id) });
    let ran = false;
    clock.setTimeout(() => (ran = true), 0).cancel();
    const plain = clock.setTimeout(() => {}, 0);
    const sampler = clock.setInterval(() => {}, 1000, { unref: true });
    assert.equal(unrefd.length, 1);
    plain.cancel();
    sampler.cancel();
    await new Promise((resolve) => setTimeout(resolve, 5));
    assert.equal(ran, false);
  });

  test("system clock: a timer fires", async () => {
    const fired = await new Promise<boolean>((resolve) => systemClock.setTimeout(() => resolve(true), 1));
    assert.equal(fired, true);
  });
});
