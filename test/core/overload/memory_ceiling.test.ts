import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { createMemoryCeiling } from "../../../src/core/overload/memory_ceiling.ts";
import { createManualClock } from "../../../src/testing/manual_clock.ts";
import type { HygieneEvent } from "../../../src/core/events.ts";

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

  test("memory ceiling: a reading that is no count of bytes (NaN, a string, a negative number, Infinity) is a failed reading, reported as a fault, not the ceiling silently off (a review)", () => {
    for (const bad of [Number.NaN, "5368709120", -5, Infinity]) {
      const clock = createManualClock();
      const events: HygieneEvent[] = [];
      const ceiling = createMemoryCeiling({ ceilingBytes: 10, intervalMs: 10, rss: () => bad as number, clock, onEvent: (e) => events.push(e) });
      assert.equal(ceiling.lastRss, undefined, String(bad));
      assert.equal(ceiling.shedding, false, "fails open");
      assert.deepEqual(events.map((e) => [e.type, e.type === "fault" && e.source]), [["fault", "memory-ceiling"]], String(bad));
      assert.match(String((events[0] as { error: Error }).error.message), /RSS reading was .*: no count of bytes/);
      ceiling.dispose();
    }
  });

  test("memory ceiling: an RSS reading of 0 (Deno's when it cannot read it, out of descriptors) is a failed reading, reported as a fault, not a process using no memory", () => {
    const clock = createManualClock();
    const events: HygieneEvent[] = [];
    let rss = 50;
    const ceiling = createMemoryCeiling({ ceilingBytes: 10, intervalMs: 10, rss: () => rss, clock, onEvent: (e) => events.push(e) });
    assert.equal(ceiling.shedding, true);
    rss = 0;
    clock.advance(10);
    assert.equal(ceiling.lastRss, undefined);
    assert.deepEqual(events.map((e) => [e.type, e.type === "fault" && e.source, e.type === "fault" && e.failed]), [["fault", "memory-ceiling", "open"]]);
    assert.match(String((events[0] as { error: Error }).error.message), /RSS reading was 0/);
    ceiling.dispose();
  });

  test("memory ceiling: clears once live memory falls, though RSS stays above the ceiling (the runtime keeps its pages)", () => {
    const clock = createManualClock();
    // Start: RSS 100, of which 40 is live; the other 60 is the process's own footprint.
    let rss = 100;
    let live = 40;
    const ceiling = createMemoryCeiling({ ceilingBytes: 1000, intervalMs: 10, rss: () => rss, live: () => live, clock });
    assert.equal(ceiling.shedding, false);
    rss = 1500;
    live = 1400;
    clock.advance(10);
    assert.equal(ceiling.shedding, true, "RSS and live memory over the ceiling");
    assert.equal(ceiling.lastEstimate, 1460);
    // The work ends and is collected: live memory falls, RSS does not.
    live = 50;
    clock.advance(10);
    assert.equal(ceiling.lastRss, 1500);
    assert.equal(ceiling.lastLive, 50);
    assert.equal(ceiling.lastEstimate, 110, "live memory plus the start-up footprint");
    assert.equal(ceiling.shedding, false);
    // No flapping while RSS stays high and live memory stays low.
    for (let i = 0; i < 5; i++) {
      clock.advance(10);
      assert.equal(ceiling.shedding, false);
    }
    // Live memory grows back into the kept pages: raised again.
    live = 1000;
    clock.advance(10);
    assert.equal(ceiling.shedding, true);
    ceiling.dispose();
  });

  test("memory ceiling: memory outside the live reading still counts up to RSS (RSS over the ceiling with live memory flat)", () => {
    const clock = createManualClock();
    let rss = 100;
    const live = 40;
    const ceiling = createMemoryCeiling({ ceilingBytes: 1000, intervalMs: 10, rss: () => rss, live: () => live, clock });
    rss = 1500;
    clock.advance(10);
    assert.equal(ceiling.lastEstimate, 100, "capped by live memory plus footprint: freed pages are not in use");
    assert.equal(ceiling.shedding, false);
    rss = 90;
    clock.advance(10);
    assert.equal(ceiling.lastEstimate, 90, "never more than RSS");
    ceiling.dispose();
  });

  test("memory ceiling: over the mark it collects once before deciding, so garbage alone never raises it", () => {
    const clock = createManualClock();
    let live = 40;
    let rss = 100;
    let collections = 0;
    const ceiling = createMemoryCeiling({
      ceilingBytes: 1000,
      intervalMs: 10,
      rss: () => rss,
      live: () => live,
      collectGarbage: () => {
        collections++;
        live = 60; // it was all garbage
      },
      clock,
    });
    assert.equal(collections, 0, "under the mark: no collection");
    rss = 1500;
    live = 1400;
    clock.advance(10);
    assert.equal(collections, 1);
    assert.equal(ceiling.shedding, false);
    assert.equal(ceiling.lastLive, 60);
    ceiling.dispose();
  });

  test("memory ceiling: while shedding it collects on each sample until live memory is under the resume mark", () => {
    const clock = createManualClock();
    let live = 40;
    let rss = 100;
    let collections = 0;
    let held = 1400; // what requests still hold
    const ceiling = createMemoryCeiling({
      ceilingBytes: 1000,
      resumeBelowBytes: 500,
      intervalMs: 10,
      rss: () => rss,
      live: () => live,
      collectGarbage: () => {
        collections++;
        live = held;
      },
      clock,
    });
    rss = 1500;
    live = 1400;
    clock.advance(10);
    assert.equal(ceiling.shedding, true);
    assert.equal(collections, 1);
    held = 600;
    live = 900;
    clock.advance(10);
    assert.equal(collections, 2);
    assert.equal(ceiling.shedding, true, "600 + footprint is above the resume mark");
    held = 100;
    clock.advance(10);
    assert.equal(collections, 3);
    assert.equal(ceiling.shedding, false);
    clock.advance(10);
    assert.equal(collections, 3, "under the mark again: no more collections");
    ceiling.dispose();
  });

  test("memory ceiling: collect: false never collects; a throwing collector or live reader fails open to RSS", () => {
    const clock = createManualClock();
    const events: HygieneEvent[] = [];
    let collections = 0;
    const off = createMemoryCeiling({
      ceilingBytes: 1000, intervalMs: 10, rss: () => 1500, live: () => 1400, collect: false,
      collectGarbage: () => void collections++, clock,
    });
    assert.equal(off.shedding, true);
    assert.equal(collections, 0);
    off.dispose();
    const broken = createMemoryCeiling({
      ceilingBytes: 1000, intervalMs: 10, rss: () => 1500,
      live: () => {
        throw new Error("no heap statistics");
      },
      collectGarbage: () => {
        throw new Error("no gc");
      },
      clock,
      onEvent: (e) => events.push(e),
    });
    assert.equal(broken.shedding, true, "RSS alone decides");
    assert.ok(events.length >= 1 && events.every((e) => e.type === "fault" && e.failed === "open"));
    broken.dispose();
  });

  test("memory ceiling: bad options throw naming the field", () => {
    assert.throws(() => createMemoryCeiling({ ceilingBytes: 0, rss: undefined }), /"ceilingBytes" must be a positive integer: current value is 0/);
    assert.throws(() => createMemoryCeiling({ ceilingBytes: 10, resumeBelowBytes: 20, rss: undefined }), /"resumeBelowBytes" must not exceed "ceilingBytes"/);
    assert.throws(() => createMemoryCeiling({ ceilingBytes: 10, resumeBelowBytes: 0, rss: undefined }), RangeError);
    assert.throws(() => createMemoryCeiling({ ceilingBytes: 10, collect: "yes" as never, rss: undefined }), /"collect" must be a boolean: current value is "yes"/);
    assert.throws(() => createMemoryCeiling({ ceilingBytes: 10, live: 5 as never, rss: undefined }), /"live" must be a function: current value is 5/);
    assert.throws(() => createMemoryCeiling({ ceilingBytes: 10, collectGarbage: {} as never, rss: undefined }), /"collectGarbage" must be a function/);
  });
});
