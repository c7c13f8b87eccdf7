import { describe, test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { createFixedWindowLimiter } from "../../../src/core/limits/fixed_window.ts";
import { createManualClock } from "../../../src/testing/manual_clock.ts";
import type { Clock } from "../../../src/core/clock.ts";
import type { DenyEvent, FaultEvent, HygieneEvent } from "../../../src/core/events.ts";
import { countMapOps } from "../../support/map_ops.ts";

describe("fixed window", () => {
  test("fixed window: defaults are 600 per 60 s over at most 4096 keys", () => {
    const limiter = createFixedWindowLimiter();
    assert.equal(limiter.limit, 600);
    assert.equal(limiter.windowMs, 60_000);
    assert.equal(limiter.size.capacity, 4096);
    assert.equal(limiter.size.value, 0);
  });

  test("fixed window: admits up to the limit, then denies with the time to the window edge", () => {
    const clock = createManualClock();
    const limiter = createFixedWindowLimiter({ limit: 3, windowMs: 1000, clock });
    assert.deepEqual(limiter.take("a"), {
      allowed: true, retryAfterMs: 0, remaining: 2, limit: 3, resetMs: 1000, windowMs: 1000, reason: undefined,
    });
    clock.advance(100);
    assert.equal(limiter.take("a").remaining, 1);
    assert.equal(limiter.take("a").remaining, 0);
    clock.advance(150);
    assert.deepEqual(limiter.take("a"), {
      allowed: false, retryAfterMs: 750, remaining: 0, limit: 3, resetMs: 750, windowMs: 1000, reason: "over-limit",
    });
  });

  test("fixed window: windows are aligned per key, starting at the key's first request", () => {
    const clock = createManualClock();
    const limiter = createFixedWindowLimiter({ limit: 1, windowMs: 1000, clock });
    limiter.take("early");
    clock.advance(600);
    limiter.take("late");
    assert.equal(limiter.take("early").retryAfterMs, 400);
    assert.equal(limiter.take("late").retryAfterMs, 1000);
    clock.advance(400);
    assert.equal(limiter.take("early").allowed, true, "early's window ended at 1000");
    assert.equal(limiter.take("late").allowed, false, "late's runs to 1600");
  });

  test("fixed window: a denied take counts nothing", () => {
    const clock = createManualClock();
    const limiter = createFixedWindowLimiter({ limit: 5, windowMs: 1000, clock });
    limiter.take("a", 3);
    const denied = limiter.take("a", 3);
    assert.equal(denied.allowed, false);
    assert.equal(denied.remaining, 2, "the 2 left are still there");
    assert.equal(limiter.take("a", 2).allowed, true);
  });

  test("fixed window: peek answers as take would without counting", () => {
    const clock = createManualClock();
    const limiter = createFixedWindowLimiter({ limit: 1, windowMs: 1000, clock });
    for (let i = 0; i < 3; i++) assert.equal(limiter.peek("a").allowed, true);
    assert.equal(limiter.size.value, 0, "peek stores nothing");
    limiter.take("a");
    assert.equal(limiter.peek("a").allowed, false);
  });

  test("fixed window: a caller's now is used instead of reading the clock", () => {
    let reads = 0;
    const clock: Clock = { ...createManualClock(), now: () => (reads++, 0) };
    const limiter = createFixedWindowLimiter({ limit: 2, windowMs: 1000, clock });
    limiter.take("a", 1, 10);
    assert.equal(limiter.take("a", 1, 510).resetMs, 500);
    assert.equal(reads, 0);
    limiter.take("b");
    assert.equal(reads, 1, "read once when not passed");
  });

  test("fixed window: a cost above the limit, or not a positive integer, throws a RangeError", () => {
    const limiter = createFixedWindowLimiter({ limit: 5 });
    assert.throws(() => limiter.take("a", 6), RangeError);
    assert.throws(() => limiter.take("a", 0), RangeError);
    assert.throws(() => limiter.take("a", 1.5), RangeError);
    assert.throws(() => limiter.peek("a", 6), /"cost" must be a positive integer not above 5: current value is 6/);
  });

  test("fixed window: bad options throw with the field and value named", () => {
    assert.throws(
      () => createFixedWindowLimiter({ limit: 0 }),
      { name: "RangeError", message: 'Cannot create fixed window limiter as "limit" must be a positive integer: current value is 0' },
    );
    assert.throws(() => createFixedWindowLimiter({ windowMs: -1 }), RangeError);
    assert.throws(() => createFixedWindowLimiter({ maxKeys: 0 }), RangeError);
    assert.throws(() => createFixedWindowLimiter({ name: 3 as never }), TypeError);
  });

  test("fixed window: an unseen key at the cap is denied only after pruning", () => {
    const clock = createManualClock();
    const limiter = createFixedWindowLimiter({ limit: 10, windowMs: 1000, maxKeys: 2, clock });
    limiter.take("a");
    clock.advance(300);
    limiter.take("b");
    const denied = limiter.take("c");
    assert.equal(denied.allowed, false);
    assert.equal(denied.reason, "table-full");
    assert.equal(denied.retryAfterMs, 700, "until the earliest stored window (a's) ends");
    clock.advance(700); // a's window has ended; b's has not
    assert.equal(limiter.take("c").allowed, true, "the prune dropped a and made room");
    assert.equal(limiter.take("b").remaining, 8, "b's window survived the prune");
    assert.equal(limiter.size.value, 2);
  });

  test("fixed window: a flood of 100k unseen keys never evicts the hot key nor grows the table", () => {
    const clock = createManualClock();
    const maxKeys = 64;
    const limiter = createFixedWindowLimiter({ limit: 1000, windowMs: 60_000, maxKeys, clock });
    for (let i = 0; i < 10; i++) limiter.take("hot");
    let admitted = 0;
    let most = 0;
    for (let i = 0; i < 100_000; i++) {
      if (limiter.take(`flood-${i}`).allowed) admitted++;
      most = Math.max(most, limiter.size.value);
      if (i % 10_000 === 0) clock.advance(1); // time moves, but no window ends
    }
    assert.equal(admitted, maxKeys - 1);
    assert.ok(most <= maxKeys, `the table held ${most} > ${maxKeys}`);
    assert.equal(limiter.take("hot").remaining, 1000 - 11, "the hot key's count survived");
  });

  test("fixed window: denials and table-full refusals emit deny events with no key", () => {
    const clock = createManualClock();
    const events: HygieneEvent[] = [];
    const limiter = createFixedWindowLimiter({ limit: 1, windowMs: 1000, maxKeys: 1, clock, name: "ip", onEvent: (e) => events.push(e) });
    limiter.take("secret-key");
    limiter.take("secret-key");
    limiter.take("other-key");
    limiter.peek("secret-key");
    assert.deepEqual(events, [
      { type: "deny", layer: "rate", reason: "over-limit", status: 429, retryAfterMs: 1000, limiterClass: "ip" },
      { type: "deny", layer: "rate", reason: "table-full", status: 429, retryAfterMs: 1000, limiterClass: "ip" },
    ]);
    assert.ok(!JSON.stringify(events).includes("key"));
  });

  test("fixed window: a broken clock fails closed with the window as Retry-After and a fault event", () => {
    const events: HygieneEvent[] = [];
    let broken = true;
    const manual = createManualClock(5);
    const clock: Clock = { ...manual, now: () => (broken ? NaN : manual.now()) };
    const limiter = createFixedWindowLimiter({ limit: 5, windowMs: 2000, clock, onEvent: (e) => events.push(e) });
    const d = limiter.take("a");
    assert.equal(d.allowed, false);
    assert.equal(d.reason, "limiter-error");
    assert.equal(d.retryAfterMs, 2000);
    assert.equal(limiter.size.value, 0, "nothing corrupt was stored");
    const fault = events.find((e): e is FaultEvent => e.type === "fault");
    assert.ok(fault && fault.source === "rate-limiter" && fault.failed === "closed" && fault.error instanceof RangeError);
    assert.ok(events.some((e) => e.type === "deny" && (e as DenyEvent).reason === "limiter-error"));
    broken = false;
    assert.equal(limiter.take("a").allowed, true, "recovers with the clock");
  });

  test("fixed window: a clock that throws fails closed, never throws", () => {
    const clock: Clock = { ...createManualClock(), now: () => { throw new Error("no time"); } };
    const limiter = createFixedWindowLimiter({ clock });
    assert.equal(limiter.take("a").reason, "limiter-error");
  });

  test("fixed window: property — within one window a key never gets more than the limit", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 20 }),
        fc.array(fc.record({ key: fc.constantFrom("a", "b", "c"), cost: fc.integer({ min: 1, max: 20 }), dt: fc.nat(300) }), { maxLength: 60 }),
        (limit, steps) => {
          const clock = createManualClock();
          const windowMs = 1000;
          const limiter = createFixedWindowLimiter({ limit, windowMs, maxKeys: 2, clock });
          const spent = new Map<string, { start: number; used: number }>();
          for (const { key, cost, dt } of steps) {
            clock.advance(dt);
            if (cost > limit) continue;
            const d = limiter.take(key, cost);
            if (!d.allowed) continue;
            const s = spent.get(key);
            if (s === undefined || clock.now() - s.start >= windowMs) spent.set(key, { start: clock.now(), used: cost });
            else {
              s.used += cost;
              assert.ok(s.used <= limit);
            }
            assert.ok(limiter.size.value <= 2);
          }
        },
      ),
    );
  });

  test("fixed window: a churning flood at a full table touches a bounded number of entries per unseen key", () => {
    const n = 4096;
    const limiter = createFixedWindowLimiter({ limit: 10, windowMs: n, maxKeys: n, clock: createManualClock() });
    const ops = countMapOps();
    try {
      let now = 0;
      for (let i = 0; i < n; i++) limiter.take(`k${i}`, 1, (now += 1));
      // Every request a new key, each arriving as the oldest stored window ends.
      const before = ops.count;
      let admitted = 0;
      for (let i = n; i < 3 * n; i++) if (limiter.take(`k${i}`, 1, (now += 1)).allowed) admitted++;
      const perKey = (ops.count - before) / (2 * n);
      assert.equal(admitted, 2 * n, "each unseen key found the window that had just ended");
      assert.ok(perKey >= 1, "the count sees the table (at least one lookup per key)");
      assert.ok(perKey <= 8, `${perKey} Map operations per unseen key (a scan is thousands)`);
      assert.equal(limiter.size.value, n);
    } finally {
      ops.restore();
    }
  });

  test("fixed window: under table pressure an unseen IPv6 key is charged to its /48's shared window; clients of other networks are served", () => {
    const clock = createManualClock();
    const limiter = createFixedWindowLimiter({ limit: 5, windowMs: 60_000, maxKeys: 64, clock });
    const flood = (i: number) => `2001:db8:1:${i.toString(16)}::/64`;
    for (let i = 0; i < 64; i++) assert.equal(limiter.take(flood(i)).allowed, true);
    const reasons = new Map<string, number>();
    let admitted = 0;
    for (let i = 64; i < 4096; i++) {
      const d = limiter.take(flood(i));
      if (d.allowed) admitted++;
      else reasons.set(String(d.reason), (reasons.get(String(d.reason)) ?? 0) + 1);
    }
    assert.equal(admitted, 5, "the rest of the /48's flood shares one window of 5");
    assert.deepEqual([...reasons], [["table-full", 4096 - 64 - 5]]);
    assert.equal(limiter.take("192.0.2.7").allowed, true, "an IPv4 client is served");
    assert.equal(limiter.take("2001:db8:2:1::/64").allowed, true, "an IPv6 client of another /48 is served");
    assert.equal(limiter.take(flood(0)).remaining, 3, "a stored flood key keeps its own window: never evicted");
    assert.equal(limiter.size.value, 64);
    clock.advance(60_000);
    assert.equal(limiter.take(flood(5000)).allowed, true, "once the stored windows end, the table has room again");
  });

  test("fixed window: under table pressure an IPv4-mapped key is its IPv4 address's (its /24 shares a window; another network is served), as a dual-stack server's peer in a custom key (a review: every IPv4 client shared ::/48)", () => {
    const clock = createManualClock();
    const limiter = createFixedWindowLimiter({ limit: 2, windowMs: 60_000, maxKeys: 16, clock });
    for (let i = 0; i < 16; i++) assert.equal(limiter.take(`10.9.${i}.1`).allowed, true);
    assert.deepEqual([1, 2, 3].map(() => limiter.take("::ffff:1.2.3.4").allowed), [true, true, false], "1.2.3.0/24's shared window of 2");
    assert.equal(limiter.take("::ffff:1.2.3.99").reason, "table-full", "the same /24");
    assert.equal(limiter.take("::ffff:9.9.9.9").allowed, true, "another IPv4 network is served");
    assert.equal(limiter.take("0:0:0:0:0:ffff:909:a0a").allowed, true, "9.9.10.10, another /24, in the long form");
  });

  test("fixed window: property — on a small table the amortised prune decides exactly as a full prune would", () => {
    // A reference with the old semantics: at the cap, drop every ended window, deny if still full.
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 8 }),
        fc.array(fc.record({ key: fc.integer({ min: 0, max: 12 }), dt: fc.nat(700) }), { maxLength: 120 }),
        (maxKeys, steps) => {
          const clock = createManualClock();
          const windowMs = 1000;
          const limit = 3;
          const limiter = createFixedWindowLimiter({ limit, windowMs, maxKeys, clock });
          const ref = new Map<string, { start: number; count: number }>();
          for (const { key: k, dt } of steps) {
            clock.advance(dt);
            const now = clock.now();
            const key = `tenant-${k}`; // not an address: no network to aggregate to
            let w = ref.get(key);
            let expected: boolean;
            if (w === undefined && ref.size >= maxKeys) {
              for (const [rk, rw] of ref) if (now >= rw.start + windowMs) ref.delete(rk);
            }
            if (w === undefined && ref.size >= maxKeys) expected = false;
            else {
              if (w === undefined || now >= w.start + windowMs) ref.set(key, (w = { start: now, count: 0 }));
              expected = w.count + 1 <= limit;
              if (expected) w.count++;
            }
            const d = limiter.take(key);
            assert.equal(d.allowed, expected, `${key} at ${now}`);
            assert.ok(limiter.size.value <= maxKeys);
          }
        },
      ),
    );
  });
});
