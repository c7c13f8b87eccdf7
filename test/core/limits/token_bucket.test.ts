import { describe, test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { createTokenBucketLimiter } from "../../../src/core/limits/token_bucket.ts";
import { createManualClock } from "../../../src/testing/manual_clock.ts";
import type { Clock } from "../../../src/core/clock.ts";
import type { FaultEvent, HygieneEvent } from "../../../src/core/events.ts";
import { countMapOps } from "../../support/map_ops.ts";

describe("token bucket", () => {
  test("token bucket: a fresh key may spend its whole burst at once, then waits one interval", () => {
    const clock = createManualClock();
    const limiter = createTokenBucketLimiter({ ratePerSecond: 10, burst: 3, clock });
    assert.deepEqual(limiter.take("a"), {
      allowed: true, retryAfterMs: 0, remaining: 2, limit: 3, resetMs: 100, windowMs: 300, reason: undefined,
    });
    assert.equal(limiter.take("a").remaining, 1);
    assert.equal(limiter.take("a").remaining, 0);
    assert.deepEqual(limiter.take("a"), {
      allowed: false, retryAfterMs: 100, remaining: 0, limit: 3, resetMs: 300, windowMs: 300, reason: "over-limit",
    });
  });

  // A review: the float slack grew with the clock's size (24 µs at an epoch-sized time, what the
  // Redis store's TIME is) past a fast rate's interval, and a burst of 3 admitted 5 at once.
  test("token bucket: at an epoch-sized time a fast rate still admits its burst, no more, and reports at most its burst", () => {
    const now = 1_796_000_000_000;
    for (const rate of [1_000, 100_000, 1_000_000]) {
      const tb = createTokenBucketLimiter({ ratePerSecond: rate, burst: 3 });
      // What a take would leave: the burst less one.
      assert.equal(tb.peek("fresh", 1, now).remaining, 2, `rate ${rate}`);
      let admitted = 0;
      for (let i = 0; i < 50; i++) if (tb.take("k", 1, now).allowed) admitted++;
      assert.equal(admitted, 3, `rate ${rate}`);
    }
  });

  test("token bucket: a burst that would refill over more than 1e12 ms is refused at creation (the Redis store cannot write its expiry)", () => {
    assert.throws(() => createTokenBucketLimiter({ ratePerSecond: 1e-14, burst: 1 }), { name: "RangeError", message: /must be at most 1000000000000: current values are 1 and 1e-14$/ });
    assert.equal(createTokenBucketLimiter({ ratePerSecond: 1e-9, burst: 1 }).take("k", 1, 0).allowed, true);
  });

  test("token bucket: retryAfterMs is the exact GCRA wait", () => {
    const clock = createManualClock();
    const limiter = createTokenBucketLimiter({ ratePerSecond: 4, burst: 4, clock }); // T = 250 ms
    assert.equal(limiter.take("a", 4).allowed, true);
    clock.advance(30);
    assert.equal(limiter.take("a").retryAfterMs, 220);
    assert.equal(limiter.take("a", 3).retryAfterMs, 720, "3 tokens: 3·250 − 30");
    clock.advance(220);
    const d = limiter.take("a");
    assert.equal(d.allowed, true);
    assert.equal(d.resetMs, 1000, "a full bucket again 4 intervals from now");
  });

  test("token bucket: tokens refill at the rate, never above the burst", () => {
    const clock = createManualClock();
    const limiter = createTokenBucketLimiter({ ratePerSecond: 2, burst: 2, clock });
    limiter.take("a", 2);
    clock.advance(500);
    assert.equal(limiter.peek("a").remaining, 0, "one token earned, peek shows what would be left after spending it");
    clock.advance(100_000);
    assert.equal(limiter.take("a").remaining, 1, "capped at the burst");
  });

  test("token bucket: fractional rates work and thirds do not lose a token to float error", () => {
    const clock = createManualClock();
    const limiter = createTokenBucketLimiter({ ratePerSecond: 3, burst: 3, clock });
    for (let i = 0; i < 3; i++) assert.equal(limiter.take("a").allowed, true, `take ${i}`);
    assert.equal(limiter.take("a").allowed, false);
    clock.advance(1000);
    assert.equal(limiter.take("a").remaining, 2);
    const slow = createTokenBucketLimiter({ ratePerSecond: 0.5, burst: 1, clock });
    slow.take("a");
    assert.equal(slow.take("a").retryAfterMs, 2000);
  });

  test("token bucket: a clock far from zero (an epoch clock; 116 days of uptime) loses no take of the burst to rounding", () => {
    for (const origin of [1e10, 1.7e12, 4.1e12]) {
      for (const [ratePerSecond, burst] of [[3, 5], [6, 2], [7, 9], [1000 / 7, 50]] as const) {
        const clock = createManualClock(origin);
        const limiter = createTokenBucketLimiter({ ratePerSecond, burst, clock });
        const takes = Array.from({ length: burst }, () => limiter.take("k"));
        const at = `origin ${origin}, ${ratePerSecond}/s, burst ${burst}`;
        assert.deepEqual(takes.map((d) => d.allowed), takes.map(() => true), at);
        assert.deepEqual(takes.map((d) => d.remaining), takes.map((_, i) => burst - 1 - i), at);
        const over = limiter.take("k");
        assert.equal(over.allowed, false, at);
        assert.ok(Math.abs(over.retryAfterMs - 1000 / ratePerSecond) < origin * 2 ** -38, `${at}: retry ${over.retryAfterMs}`); // a few units in the last place
      }
    }
  });

  test("token bucket: a denied take counts nothing; peek never counts", () => {
    const clock = createManualClock();
    const limiter = createTokenBucketLimiter({ ratePerSecond: 1, burst: 5, clock });
    limiter.take("a", 3);
    assert.equal(limiter.take("a", 3).allowed, false);
    assert.equal(limiter.peek("a", 2).allowed, true);
    assert.equal(limiter.take("a", 2).allowed, true);
    assert.equal(limiter.peek("new").allowed, true);
    assert.equal(limiter.size.value, 1, "peek stored nothing");
  });

  test("token bucket: a cost above the burst throws a RangeError", () => {
    const limiter = createTokenBucketLimiter({ ratePerSecond: 1, burst: 5 });
    assert.throws(() => limiter.take("a", 6), /"cost" must be a positive integer not above 5: current value is 6/);
    assert.throws(() => limiter.take("a", -1), RangeError);
  });

  test("token bucket: bad options throw with the field and value named", () => {
    assert.throws(
      () => createTokenBucketLimiter({ ratePerSecond: 0, burst: 1 }),
      { name: "RangeError", message: 'Cannot create token bucket limiter as "ratePerSecond" must be a positive finite number: current value is 0' },
    );
    assert.throws(() => createTokenBucketLimiter({ ratePerSecond: Infinity, burst: 1 }), RangeError);
    assert.throws(
      () => createTokenBucketLimiter({ ratePerSecond: 1e-307, burst: 1 }),
      /"burst" × 1000 ÷ "ratePerSecond" \(the ms the burst takes to refill\) must be at most 1000000000000: current values are \d+ and 1e-307/,
    );
    assert.throws(() => createTokenBucketLimiter({ ratePerSecond: 1e-300, burst: 2 ** 40 }), RangeError);
    assert.throws(() => createTokenBucketLimiter({ ratePerSecond: 1, burst: 1.5 }), RangeError);
    assert.throws(() => createTokenBucketLimiter({ ratePerSecond: 1 } as never), /"burst" must be a positive integer/);
  });

  test("token bucket: an unseen key at the cap is denied only after pruning idle keys", () => {
    const clock = createManualClock();
    const limiter = createTokenBucketLimiter({ ratePerSecond: 10, burst: 5, maxKeys: 2, clock }); // T = 100
    limiter.take("a"); // TAT 100
    limiter.take("b", 5); // TAT 500
    const denied = limiter.take("c");
    assert.equal(denied.reason, "table-full");
    assert.equal(denied.retryAfterMs, 100, "until the first key goes idle");
    clock.advance(100);
    assert.equal(limiter.take("c").allowed, true, "a was idle (bucket full) and pruned");
    assert.equal(limiter.take("b").remaining, 0, "b kept its TAT (one token earned, spent): never evicted");
    assert.equal(limiter.size.value, 2);
  });

  test("token bucket: a flood of 100k unseen keys never evicts the hot key nor grows the table", () => {
    const clock = createManualClock();
    const limiter = createTokenBucketLimiter({ ratePerSecond: 1, burst: 100, maxKeys: 64, clock });
    limiter.take("hot", 50);
    let most = 0;
    for (let i = 0; i < 100_000; i++) {
      limiter.take(`flood-${i}`);
      most = Math.max(most, limiter.size.value);
    }
    assert.ok(most <= 64);
    assert.equal(limiter.take("hot").remaining, 49, "the hot key's TAT survived");
  });

  test("token bucket: a broken clock fails closed with one interval as Retry-After and a fault event", () => {
    const events: HygieneEvent[] = [];
    const clock: Clock = { ...createManualClock(), now: () => NaN };
    const limiter = createTokenBucketLimiter({ ratePerSecond: 4, burst: 2, clock, name: "auth", onEvent: (e) => events.push(e) });
    const d = limiter.take("a");
    assert.equal(d.allowed, false);
    assert.equal(d.reason, "limiter-error");
    assert.equal(d.retryAfterMs, 250);
    assert.equal(limiter.size.value, 0);
    const fault = events.find((e): e is FaultEvent => e.type === "fault");
    assert.ok(fault && fault.source === "rate-limiter" && fault.failed === "closed");
    assert.deepEqual(events.find((e) => e.type === "deny"), {
      type: "deny", layer: "rate", reason: "limiter-error", status: 429, retryAfterMs: 250, limiterClass: "auth",
    });
  });

  test("token bucket: property — never admits more than burst + rate·t over any interval", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 50 }),
        fc.integer({ min: 1, max: 10 }),
        fc.array(fc.record({ dt: fc.nat(400), cost: fc.integer({ min: 1, max: 10 }) }), { minLength: 1, maxLength: 80 }),
        (ratePerSecond, burst, steps) => {
          const clock = createManualClock();
          const limiter = createTokenBucketLimiter({ ratePerSecond, burst, clock });
          const admitted: { at: number; cost: number }[] = [];
          for (const { dt, cost } of steps) {
            clock.advance(dt);
            if (cost > burst) continue;
            if (limiter.take("k", cost).allowed) admitted.push({ at: clock.now(), cost });
          }
          for (let i = 0; i < admitted.length; i++) {
            let sum = 0;
            for (let j = i; j < admitted.length; j++) {
              sum += admitted[j]!.cost;
              const t = (admitted[j]!.at - admitted[i]!.at) / 1000;
              assert.ok(sum <= burst + ratePerSecond * t + 1e-6, `${sum} admitted in ${t} s`);
            }
          }
        },
      ),
    );
  });

  test("token bucket: property — a key that waits the given retryAfterMs is admitted", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 1000 }),
        fc.integer({ min: 1, max: 20 }),
        fc.integer({ min: 1, max: 20 }),
        (ratePerSecond, burst, cost) => {
          if (cost > burst) return;
          let now = 1_000_000.5;
          const limiter = createTokenBucketLimiter({ ratePerSecond, burst });
          limiter.take("k", burst, now);
          const d = limiter.take("k", cost, now);
          assert.equal(d.allowed, false);
          now += d.retryAfterMs;
          assert.equal(limiter.take("k", cost, now).allowed, true);
        },
      ),
    );
  });

  test("token bucket: a churning flood at a full table touches a bounded number of entries per unseen key", () => {
    const n = 4096;
    // One token per n ms, burst 1: a key's bucket is full again n ms after its one request.
    const limiter = createTokenBucketLimiter({ ratePerSecond: 1000 / n, burst: 1, maxKeys: n, clock: createManualClock() });
    const ops = countMapOps();
    try {
      let now = 0;
      for (let i = 0; i < n; i++) limiter.take(`k${i}`, 1, (now += 1));
      const before = ops.count;
      let admitted = 0;
      for (let i = n; i < 3 * n; i++) if (limiter.take(`k${i}`, 1, (now += 1)).allowed) admitted++;
      const perKey = (ops.count - before) / (2 * n);
      assert.equal(admitted, 2 * n, "each unseen key found the bucket that had just refilled");
      assert.ok(perKey >= 1, "the count sees the table (at least one lookup per key)");
      assert.ok(perKey <= 8, `${perKey} Map operations per unseen key (a scan is thousands)`);
      assert.equal(limiter.size.value, n);
    } finally {
      ops.restore();
    }
  });

  test("token bucket: under table pressure unseen IPv6 keys share their /48's bucket; clients of other networks are served", () => {
    const clock = createManualClock();
    const limiter = createTokenBucketLimiter({ ratePerSecond: 1, burst: 5, maxKeys: 64, clock });
    const flood = (i: number) => `2001:db8:1:${i.toString(16)}::/64`;
    for (let i = 0; i < 64; i++) assert.equal(limiter.take(flood(i), 5).allowed, true);
    let admitted = 0;
    for (let i = 64; i < 4096; i++) if (limiter.take(flood(i)).allowed) admitted++;
    assert.equal(admitted, 5, "the rest of the /48's flood shares one bucket of 5");
    assert.equal(limiter.take(flood(9999)).reason, "table-full");
    assert.equal(limiter.take("192.0.2.7").allowed, true, "an IPv4 client is served");
    assert.equal(limiter.take("2001:db8:2:1::/64").allowed, true, "an IPv6 client of another /48 is served");
    assert.equal(limiter.size.value, 64);
  });
});
