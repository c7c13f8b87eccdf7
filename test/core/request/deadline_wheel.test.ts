import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { createDeadlineWheel, createTimerDeadlines, type Deadlines } from "../../../src/core/request/deadline_wheel.ts";
import { createManualClock } from "../../../src/testing/manual_clock.ts";
import { reclaimed } from "../../support/memory.ts";

// Schedules `n` deadlines, each for a request-sized object, and cancels them; returns only weak
// references to the objects (a helper, so no local of the test keeps them).
function cancelled(wheel: Deadlines, n: number): WeakRef<object>[] {
  return Array.from({ length: n }, () => {
    const request = { body: new Uint8Array(1024) };
    wheel.schedule(1000, () => {}, undefined, request).cancel();
    return new WeakRef(request);
  });
}

describe("deadline wheel", () => {
  test("deadline wheel: a deadline fires within one tick after it, never before", () => {
    const clock = createManualClock(3);
    const wheel = createDeadlineWheel({ clock, resolutionMs: 10 });
    const fired: number[] = [];
    wheel.schedule(25, () => fired.push(clock.now()));
    clock.advance(24);
    assert.deepEqual(fired, []);
    clock.advance(10);
    assert.equal(fired.length, 1);
    assert.ok(fired[0]! >= 28 && fired[0]! < 38, `fired at ${fired[0]}`);
  });

  // A review: after a pause (a frozen container, SIGSTOP) the first tick stepped through every
  // slot the pause spanned, one Map lookup each: a synchronous 137 ms a day of pause, seconds a week.
  test("deadline wheel: the first tick after a long pause visits the slots it holds, not every slot the pause spanned, and fires them in order", () => {
    let t = 0;
    let tick: (() => void) | undefined;
    const handle = { cancel: () => (tick = undefined) };
    const clock = { now: () => t, setTimeout: () => handle, setInterval: (fn: () => void) => ((tick = fn), handle) };
    const wheel = createDeadlineWheel({ clock, resolutionMs: 10 });
    const fired: string[] = [];
    wheel.schedule(40, () => fired.push("second"));
    wheel.schedule(25, () => fired.push("first"));
    wheel.schedule(7 * 86_400_000, () => fired.push("next week"));
    tick!(); // files them in their slots
    t = 86_400_000; // a day later, no tick between
    const get = Map.prototype.get;
    let lookups = 0;
    Map.prototype.get = function (this: Map<unknown, unknown>, key: unknown) {
      lookups++;
      return get.call(this, key);
    };
    try {
      tick!();
    } finally {
      Map.prototype.get = get;
    }
    assert.deepEqual(fired, ["first", "second"]);
    assert.ok(lookups < 10, `${lookups} slot lookups`);
    assert.equal(wheel.pending, 1);
    t = 7 * 86_400_000 + 10;
    tick!();
    assert.deepEqual(fired, ["first", "second", "next week"]);
  });

  test("deadline wheel: one shared timer for many deadlines, and none once all are done", () => {
    const clock = createManualClock();
    const wheel = createDeadlineWheel({ clock, resolutionMs: 10 });
    const handles = Array.from({ length: 1000 }, (_, i) => wheel.schedule(100 + i, () => {}));
    assert.equal(clock.pendingTimers, 1);
    assert.equal(wheel.pending, 1000);
    for (const h of handles) h.cancel();
    assert.equal(wheel.pending, 0);
    assert.equal(clock.pendingTimers, 1, "kept until its next tick, so quiet traffic does not churn timers");
    clock.advance(10);
    assert.equal(clock.pendingTimers, 0, "an idle wheel holds no timer");
  });

  test("deadline wheel: a deadline cancelled before the next tick (most requests end within one) no longer holds its request", async () => {
    const clock = createManualClock();
    const wheel = createDeadlineWheel({ clock, resolutionMs: 10 });
    const refs = cancelled(wheel, 50);
    assert.equal(clock.pendingTimers, 1, "no tick has run: the cancelled entries are still on the wheel's list");
    const freed = await reclaimed(refs);
    assert.ok(freed >= 45, `${freed} of 50 cancelled requests reclaimed`);
    clock.advance(10);
    assert.equal(wheel.pending, 0);
  });

  test("deadline wheel: a cancelled deadline never fires; cancelling twice is harmless", () => {
    const clock = createManualClock();
    const wheel = createDeadlineWheel({ clock });
    let fired = 0;
    const a = wheel.schedule(10, () => fired++);
    wheel.schedule(10, () => fired++);
    a.cancel();
    a.cancel();
    clock.advance(100);
    assert.equal(fired, 1);
    assert.equal(wheel.pending, 0);
  });

  test("deadline wheel: a deadline cancelled before or after the tick that files it never fires; the others fire once, in time", () => {
    const clock = createManualClock();
    const wheel = createDeadlineWheel({ clock, resolutionMs: 10 });
    const fired: string[] = [];
    const early = wheel.schedule(50, () => fired.push("early"));
    const late = wheel.schedule(50, () => fired.push("late"));
    wheel.schedule(50, () => fired.push("kept"));
    wheel.schedule(5, () => fired.push("short"));
    early.cancel(); // before any tick: still on the list of new deadlines
    clock.advance(10); // the tick files the rest into their slots and fires the short one
    assert.deepEqual(fired, ["short"]);
    late.cancel(); // after it was filed
    assert.equal(wheel.pending, 1);
    clock.advance(30);
    assert.deepEqual(fired, ["short"], "not before its time");
    clock.advance(20);
    assert.deepEqual(fired, ["short", "kept"]);
    assert.equal(wheel.pending, 0);
    clock.advance(100);
    assert.deepEqual(fired, ["short", "kept"]);
  });

  // A soak review: with one long request always open, each ended request of a route with an
  // hour's deadline left its emptied slot in the wheel until the sweep reached it an hour later
  // (~100 sets a second, ~1 MB a minute).
  test("deadline wheel: a slot emptied by cancels is let go at once, while other deadlines stay pending", () => {
    const clock = createManualClock();
    const wheel = createDeadlineWheel({ clock, resolutionMs: 10 }) as Deadlines & { readonly slots: number };
    let fired = 0;
    wheel.schedule(3_600_000, () => fired++); // the long request that stays open
    for (let i = 0; i < 200; i++) {
      const h = wheel.schedule(3_600_000, () => fired++);
      clock.advance(10); // outlives a tick: filed in its slot
      h.cancel();
    }
    assert.equal(wheel.pending, 1);
    assert.ok(wheel.slots <= 2, `emptied slots let go: ${wheel.slots} held`);
    clock.advance(3_600_000);
    assert.equal(fired, 1, "the one left fires");
    assert.equal(wheel.slots, 0);
  });

  test("deadline wheel: a zero delay still fires on the next tick", () => {
    const clock = createManualClock(20);
    const wheel = createDeadlineWheel({ clock, resolutionMs: 10 });
    let fired = false;
    wheel.schedule(5, () => {});
    wheel.schedule(0, () => (fired = true));
    clock.advance(10);
    assert.equal(fired, true);
  });

  test("timer deadlines: one clock timer each, exact", () => {
    const clock = createManualClock();
    const deadlines = createTimerDeadlines(clock);
    let at = -1;
    deadlines.schedule(25, () => (at = clock.now()));
    const b = deadlines.schedule(30, () => assert.fail("cancelled"));
    assert.equal(clock.pendingTimers, 2);
    b.cancel();
    clock.advance(40);
    assert.equal(at, 25);
    assert.equal(deadlines.pending, 0);
  });
});
