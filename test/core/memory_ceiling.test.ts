import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { createMemoryCeiling } from "../../src/core/memory_ceiling.ts";
import { createManualClock } from "../../src/core/manual_clock.ts";
import type { HygieneEvent } from "../../src/core/events.ts";

describe("memory ceiling", () => {
  test("memory ceiling: the flag raises above the ceiling and clears once RSS falls back", () => {
    const clock = createManualClock();
    let rss = 100;
    let reads = 0;
    const ceiling = createMemoryCeiling({ ceilingBytes: 1000, intervalMs: 30_000, rss: () => (reads++, rss), clock });
    assert.equal(reads, 1, "sampled once at start");
    rss = 1500;
    clock.advance(29_999);
    assert.equal(ceiling.shedding, false, "RSS is read on the timer, never in between");
    clock.advance(1);
    assert.equal(ceiling.shedding, true);
    assert.equal(ceiling.lastRss, 1500);
    rss = 900;
    clock.advance(30_000);
    assert.equal(ceiling.shedding, false);
    assert.equal(reads, 3);
    ceiling.dispose();
  });

  test("memory ceiling: with a resume mark it stays shedding until RSS is below the mark", () => {
    const clock = createManualClock();
    let rss = 2000;
    const ceiling = createMemoryCeiling({ ceilingBytes: 1000, resumeBelowBytes: 800, intervalMs: 10, rss: () => rss, clock });
    assert.equal(ceiling.shedding, true);
    rss = 900;
    clock.advance(10);
    assert.equal(ceiling.shedding, true);
    rss = 800;
    clock.advance(10);
    assert.equal(ceiling.shedding, false);
  });

  test("memory ceiling: off without an RSS reader — no timer, never shedding", () => {
    const clock = createManualClock();
    const ceiling = createMemoryCeiling({ ceilingBytes: 1, rss: undefined, clock });
    assert.equal(clock.pendingTimers, 0);
    assert.equal(ceiling.shedding, false);
  });

  test("memory ceiling: dispose stops the sampler at once", () => {
    const clock = createManualClock();
    let reads = 0;
    const ceiling = createMemoryCeiling({ ceilingBytes: 1, rss: () => (reads++, 5), intervalMs: 10, clock });
    assert.equal(ceiling.shedding, true);
    ceiling.dispose();
    assert.equal(clock.pendingTimers, 0);
    assert.equal(ceiling.shedding, false);
    clock.advance(1000);
    assert.equal(reads, 1);
  });

  test("memory ceiling: fails open when the reader throws, and says so", () => {
    const clock = createManualClock();
    const events: HygieneEvent[] = [];
    let broken = false;
    const ceiling = createMemoryCeiling({
      ceilingBytes: 10,
      intervalMs: 10,
      rss: () => {
        if (broken) throw new Error("no /proc");
        return 50;
      },
      clock,
      onEvent: (e) => events.push(e),
    });
    assert.equal(ceiling.shedding, true);
    broken = true;
    clock.advance(10);
    assert.equal(ceiling.shedding, false);
    assert.equal(events[0]?.type, "fault");
    assert.equal(events[0]?.type === "fault" && events[0].failed, "open");
    ceiling.dispose();
  });

  test("memory ceiling: bad options throw naming the field", () => {
    assert.throws(() => createMemoryCeiling({ ceilingBytes: 0, rss: undefined }), /"ceilingBytes" must be a positive integer: current value is 0/);
    assert.throws(() => createMemoryCeiling({ ceilingBytes: 10, resumeBelowBytes: 20, rss: undefined }), /"resumeBelowBytes" must not exceed "ceilingBytes"/);
  });
});
