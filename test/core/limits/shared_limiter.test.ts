import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { createFixedWindowLimiter } from "../../../src/core/limits/fixed_window.ts";
import { createTokenBucketLimiter } from "../../../src/core/limits/token_bucket.ts";
import { createRateStore } from "../../../src/core/limits/rate_store.ts";
import type { RateDecision } from "../../../src/core/limits/rate_limiter.ts";
import { createManualClock } from "../../../src/testing/manual_clock.ts";
import type { FaultEvent, HygieneEvent } from "../../../src/core/events.ts";
import { ALLOW, createFakeBackend, DENY } from "../../support/fake_store.ts";
import { flushMicrotasks } from "../../support/flush.ts";

function setup(shared: { failure?: "open" | "closed"; expectedInstances?: number; maxDeniedKeys?: number } = {}, store: { fallbackAfter?: number; maxPending?: number } = {}) {
  const clock = createManualClock();
  const backend = createFakeBackend();
  const events: HygieneEvent[] = [];
  const onEvent = (e: HygieneEvent) => events.push(e);
  const rs = createRateStore(backend, { clock, timeoutMs: 50, onEvent, ...store });
  const limiter = createFixedWindowLimiter({ name: "ip", limit: 10, windowMs: 1000, clock, store: rs, onEvent, ...shared });
  return { clock, backend, events, store: rs, limiter };
}

/** The decision, whether it came at once or later. */
const settle = (d: RateDecision | Promise<RateDecision>) => Promise.resolve(d);

describe("shared limiter", () => {
  test("shared limiter: a fixed window with a store asks it, with the limiter's figures, and answers its result", async () => {
    const { backend, limiter } = setup();
    const d = limiter.take("203.0.113.7");
    assert.ok(d instanceof Promise, "a store call answers later");
    assert.deepEqual(backend.calls[0]!.checks, [
      { algorithm: "fixed-window", limiter: "ip", key: "203.0.113.7", cost: 1, limit: 10, windowMs: 1000, intervalMs: 1000 },
    ]);
    backend.calls[0]!.resolve([{ allowed: true, retryAfterMs: 0, remaining: 9, resetMs: 1000 }]);
    assert.deepEqual(await d, { allowed: true, retryAfterMs: 0, remaining: 9, limit: 10, resetMs: 1000, windowMs: 1000, reason: undefined });
  });

  test("shared limiter: a token bucket sends its burst, refill time and emission interval", () => {
    const clock = createManualClock();
    const backend = createFakeBackend();
    const limiter = createTokenBucketLimiter({ name: "api", ratePerSecond: 4, burst: 8, clock, store: createRateStore(backend, { clock }) });
    void limiter.take("k", 2);
    assert.deepEqual(backend.calls[0]!.checks, [
      { algorithm: "token-bucket", limiter: "api", key: "k", cost: 2, limit: 8, windowMs: 2000, intervalMs: 250 },
    ]);
    assert.equal(limiter.insurance.limit, 8);
  });

  test("shared limiter: a key the store denied until T is denied locally, with no call, until T", async () => {
    const { clock, backend, limiter, events } = setup();
    const first = limiter.take("k");
    backend.calls[0]!.resolve([DENY(300)]);
    assert.equal((await first).allowed, false);
    clock.advance(100);
    const cached = limiter.take("k");
    assert.ok(!(cached instanceof Promise), "answered at once");
    assert.deepEqual([cached.allowed, cached.retryAfterMs, cached.reason], [false, 200, "over-limit"]);
    assert.equal(backend.calls.length, 1, "no round-trip");
    assert.equal(limiter.size.value, 1);
    clock.advance(200);
    assert.ok(limiter.take("k") instanceof Promise, "at T the store is asked again");
    assert.equal(backend.calls.length, 2);
    assert.equal(events.filter((e) => e.type === "deny").length, 2, "each denial is reported, cached or not");
  });

  test("shared limiter: a cached denial reports the store's reset time, counted down, not the retry time", async () => {
    const clock = createManualClock();
    const backend = createFakeBackend();
    const limiter = createTokenBucketLimiter({ name: "api", ratePerSecond: 2, burst: 3, clock, store: createRateStore(backend, { clock }) });
    const first = limiter.take("k");
    backend.calls[0]!.resolve([{ allowed: false, retryAfterMs: 500, remaining: 0, resetMs: 1500 }]);
    assert.deepEqual([(await first).retryAfterMs, (await first).resetMs], [500, 1500]);
    clock.advance(100);
    const cached = await settle(limiter.take("k"));
    assert.equal(backend.calls.length, 1, "answered from the cache");
    assert.deepEqual([cached.allowed, cached.retryAfterMs, cached.resetMs], [false, 400, 1400]);
  });

  // A review: Redis's clock stepped back 10 min for 3 s; the store answered retryAfterMs ≈ 600 s
  // for a 1 s bucket, every instance cached that denial and answered 429 for ten minutes.
  test("shared limiter: a store's times past the limiter's window are bounded by it, in the answer and in the denied-key cache", async () => {
    const { clock, backend, limiter } = setup();
    const first = limiter.take("k");
    backend.calls[0]!.resolve([{ allowed: false, retryAfterMs: 600_000, remaining: 0, resetMs: 600_000 }]);
    const d = await first;
    assert.deepEqual([d.allowed, d.retryAfterMs, d.resetMs], [false, 1000, 1000]);
    clock.advance(999);
    const cached = limiter.take("k");
    assert.ok(!(cached instanceof Promise), "still cached within the window");
    assert.deepEqual([cached.allowed, cached.retryAfterMs], [false, 1]);
    clock.advance(1);
    const second = limiter.take("k");
    assert.ok(second instanceof Promise, "after one window the store is asked again");
    assert.equal(backend.calls.length, 2);
    // A negative time (a clock that went forward under the store) is no wait at all.
    backend.calls[1]!.resolve([{ allowed: false, retryAfterMs: -5, remaining: 0, resetMs: -5 }]);
    assert.deepEqual([(await second).retryAfterMs, (await second).resetMs], [0, 0]);
    assert.ok(limiter.take("k") instanceof Promise, "a denial of no wait is not answered from the cache");
    assert.equal(backend.calls.length, 3);
  });

  test("shared limiter: the denied-key cache is bounded, and 0 disables it", async () => {
    const { backend, limiter } = setup({ maxDeniedKeys: 2 });
    for (const key of ["a", "b", "c"]) {
      const d = limiter.take(key);
      backend.calls.at(-1)!.resolve([DENY(500)]);
      await d;
    }
    assert.deepEqual([limiter.size.value, limiter.size.capacity], [2, 2]);
    assert.ok(limiter.take("c") instanceof Promise, "a denial with no room is not cached");
    const off = setup({ maxDeniedKeys: 0 });
    const d = off.limiter.take("k");
    off.backend.calls[0]!.resolve([DENY(500)]);
    await d;
    assert.ok(off.limiter.take("k") instanceof Promise);
  });

  test("shared limiter: a denial cached for a cost does not refuse a smaller cost", async () => {
    const { backend, limiter } = setup();
    const d = limiter.take("k", 5);
    backend.calls[0]!.resolve([DENY(500)]);
    await d;
    assert.ok(!(limiter.take("k", 5) instanceof Promise));
    assert.ok(!(limiter.take("k", 6) instanceof Promise));
    assert.ok(limiter.take("k", 1) instanceof Promise);
  });

  test("shared limiter: a token bucket's cached denial answers its own cost only: a larger cost waits longer, so the store is asked", async () => {
    const clock = createManualClock();
    const backend = createFakeBackend();
    const bucket = createTokenBucketLimiter({ name: "tb", ratePerSecond: 50, burst: 9, clock, store: createRateStore(backend, { clock }) });
    const d = bucket.take("k", 2);
    backend.calls[0]!.resolve([DENY(40)]);
    assert.equal((await d).retryAfterMs, 40);
    const same = bucket.take("k", 2);
    assert.ok(!(same instanceof Promise), "the same cost: denied from the cache");
    assert.equal(same.retryAfterMs, 40);
    // A review: the cached 20 ms for cost 1 answered a cost of 3, which needed 60.
    assert.ok(bucket.take("k", 3) instanceof Promise, "a larger cost: asked of the store");
    assert.equal(backend.calls.length, 2);
  });

  test("shared limiter: a token bucket that admits a key forgets the denial cached for it (less is left: that wait is stale); a fixed window keeps it (its edge does not move)", async () => {
    const clock = createManualClock();
    const backend = createFakeBackend();
    const store = createRateStore(backend, { clock });
    const limiters = [
      createTokenBucketLimiter({ name: "tb", ratePerSecond: 0.1, burst: 3, clock, store }),
      createFixedWindowLimiter({ name: "fw", limit: 3, windowMs: 60_000, clock, store }),
    ];
    for (const limiter of limiters) {
      const denied = limiter.take("k", 2);
      backend.calls.at(-1)!.resolve([DENY(5000)]);
      assert.equal((await denied).allowed, false);
      assert.ok(!(limiter.take("k", 2) instanceof Promise), "cached");
      const admitted = limiter.take("k", 1);
      backend.calls.at(-1)!.resolve([ALLOW(0)]);
      assert.equal((await admitted).allowed, true);
      // A review: the bucket's cached 5 s answered here, where it now needed 15 s.
      assert.equal(limiter.take("k", 2) instanceof Promise, limiter.name === "tb", `${limiter.name}: asked of the store again`);
    }
  });

  test("shared limiter: a local pre-check denies with no call, and is charged before the call", async () => {
    const clock = createManualClock();
    const backend = createFakeBackend();
    const local = createFixedWindowLimiter({ limit: 2, windowMs: 1000, clock });
    const limiter = createFixedWindowLimiter({ name: "ip", limit: 10, windowMs: 1000, clock, store: createRateStore(backend, { clock }), localLimiter: local });
    const a = limiter.take("k");
    const b = limiter.take("k");
    assert.equal(local.peek("k").remaining, 0, "charged before the answers");
    const c = limiter.take("k");
    assert.ok(!(c instanceof Promise));
    assert.equal(c.allowed, false);
    assert.equal(backend.calls.length, 2);
    backend.calls[0]!.resolve([ALLOW(9)]);
    backend.calls[1]!.resolve([DENY(100)]);
    assert.deepEqual([(await a).allowed, (await b).allowed], [true, false]);
  });

  test("shared limiter: a failed call fails closed by default (429 limiter-error, a fault event)", async () => {
    const { clock, limiter, events } = setup();
    const d = limiter.take("k");
    clock.advance(50);
    assert.deepEqual(await d, { allowed: false, retryAfterMs: 1000, remaining: 0, limit: 10, resetMs: 1000, windowMs: 1000, reason: "limiter-error" });
    const fault = events.find((e) => e.type === "fault") as FaultEvent;
    assert.deepEqual([fault.source, fault.failed, (fault.error as DOMException).name], ["rate-store", "closed", "TimeoutError"]);
  });

  test("shared limiter: with failure \"open\" a failed call admits", async () => {
    const { backend, limiter, events } = setup({ failure: "open" });
    const d = limiter.take("k");
    backend.calls[0]!.reject(new Error("ECONNRESET"));
    assert.equal((await d).allowed, true);
    assert.equal((events.find((e) => e.type === "fault") as FaultEvent).failed, "open");
  });

  // The shared-limits review: with the window as Retry-After, one Redis stall told a client to
  // stay away for the whole window (an hour, for an hourly limit).
  test("shared limiter: with failure \"closed\" a failed call refuses, its Retry-After a second at most (the limiter's interval when shorter), not its window", async () => {
    const clock = createManualClock();
    const backend = createFakeBackend();
    const store = createRateStore(backend, { clock });
    const window = createFixedWindowLimiter({ name: "w", limit: 10, windowMs: 5000, clock, store, failure: "closed" });
    const bucket = createTokenBucketLimiter({ name: "b", ratePerSecond: 4, burst: 8, clock, store, failure: "closed" });
    const w = window.take("k");
    const b = bucket.take("k");
    for (const call of backend.calls) call.reject(new Error("ECONNRESET"));
    assert.deepEqual([(await w).allowed, (await w).reason, (await w).retryAfterMs], [false, "limiter-error", 1000]);
    assert.deepEqual([(await b).allowed, (await b).reason, (await b).retryAfterMs], [false, "limiter-error", 250], "the bucket's interval (4 a second)");
  });

  test("shared limiter: a saturated store answers at once by the failure mode", () => {
    const { limiter } = setup({ failure: "closed" }, { maxPending: 1 });
    assert.ok(limiter.take("a") instanceof Promise);
    const d = limiter.take("b");
    assert.ok(!(d instanceof Promise));
    assert.equal(d.reason, "limiter-error");
  });

  test("shared limiter: while the store falls back, the insurance limiter enforces limit ÷ expectedInstances", async () => {
    const { backend, limiter, events, store } = setup({ expectedInstances: 4 }, { fallbackAfter: 1 });
    const d = limiter.take("k");
    backend.calls[0]!.reject(new Error("down"));
    assert.equal((await d).allowed, true, "the failure that tipped it is answered by the insurance limiter");
    assert.equal(store.state, "fallback");
    assert.equal(limiter.insurance.limit, 2, "10 ÷ 4, rounded down");
    const answers = [limiter.take("k"), limiter.take("k"), limiter.take("k")];
    assert.ok(answers.every((a) => !(a instanceof Promise)), "no call while falling back");
    assert.deepEqual(answers.map((a) => (a as RateDecision).allowed), [true, false, false]);
    assert.equal(backend.calls.length, 1);
    assert.equal(events.filter((e) => e.type === "fault").length, 0, "falling back is no fault per request");
  });

  test("shared limiter: the failure that makes the store fall back, and a failed probe, are answered by the insurance limiter", async () => {
    const { clock, backend, limiter, events } = setup({ expectedInstances: 2 }, { fallbackAfter: 2 });
    const first = limiter.take("k");
    backend.calls[0]!.reject(new Error("down"));
    assert.equal((await first).reason, "limiter-error", "before the fallback: the failure mode (closed)");
    const tipping = limiter.take("k");
    backend.calls[1]!.reject(new Error("down"));
    assert.deepEqual([(await tipping).allowed, (await tipping).limit], [true, 5], "the insurance limiter admits, and speaks (10 ÷ 2)");
    assert.equal(limiter.insurance.peek("k").remaining, 3, "and was charged (5 - 1, as if taking one more)");
    clock.advance(1000);
    const probe = limiter.take("k");
    backend.calls[2]!.reject(new Error("still down"));
    assert.equal((await probe).allowed, true);
    assert.equal(events.filter((e) => e.type === "fault").length, 1, "only the failure before the fallback is a fault");
  });

  test("shared limiter: a cost above the insurance share is denied while falling back, never thrown", async () => {
    const { backend, limiter } = setup({ expectedInstances: 10, failure: "open" }, { fallbackAfter: 1 });
    const d = limiter.take("k");
    backend.calls[0]!.reject(new Error("down"));
    await d;
    const big = limiter.take("k", 5) as RateDecision;
    assert.deepEqual([big.allowed, big.reason], [false, "limiter-error"]);
  });

  test("shared limiter: the store recovers after a probe and the limiter asks it again", async () => {
    const { clock, backend, limiter, events } = setup({}, { fallbackAfter: 1 });
    const d = limiter.take("k");
    backend.calls[0]!.reject(new Error("down"));
    await d;
    clock.advance(1000);
    const probe = limiter.take("k");
    assert.ok(probe instanceof Promise);
    backend.calls[1]!.resolve([ALLOW(9)]);
    assert.equal((await probe).remaining, 9);
    assert.deepEqual(events.filter((e) => e.type === "store").map((e) => (e as { state: string }).state), ["fallback", "recovered"]);
    assert.ok(limiter.take("k") instanceof Promise);
  });

  test("shared limiter: a clock that fails denies, whatever the failure mode", async () => {
    const backend = createFakeBackend();
    const clock = { now: () => NaN, setTimeout: () => ({ cancel() {} }), setInterval: () => ({ cancel() {} }) };
    const limiter = createFixedWindowLimiter({ name: "ip", clock, store: createRateStore(backend, { clock }), failure: "open" });
    const d = await settle(limiter.take("k"));
    assert.deepEqual([d.allowed, d.reason], [false, "limiter-error"]);
    assert.equal(backend.calls.length, 0);
  });

  test("shared limiter: the options are validated: a name is required, failure, instances, local limiter", () => {
    const store = createRateStore(createFakeBackend());
    assert.throws(() => createFixedWindowLimiter({ store }), /a shared limiter's "name" must be 1-64 letters/);
    assert.throws(() => createFixedWindowLimiter({ store, name: "a b" }), TypeError);
    assert.throws(() => createFixedWindowLimiter({ store, name: "ip", failure: "maybe" as never }), /"failure" must be "open" or "closed"/);
    assert.throws(() => createFixedWindowLimiter({ store, name: "ip", expectedInstances: 0 }), /"expectedInstances" must be a positive integer/);
    assert.throws(() => createFixedWindowLimiter({ store, name: "ip", maxDeniedKeys: -1 }), /"maxDeniedKeys"/);
    assert.throws(() => createFixedWindowLimiter({ store: {} as never, name: "ip" }), /"store" must be a rate store/);
    const shared = createFixedWindowLimiter({ store, name: "ip", limit: 10 });
    assert.throws(() => createFixedWindowLimiter({ store, name: "ip2", localLimiter: shared as never }), /"localLimiter" must be an in-memory rate limiter/);
    assert.throws(() => shared.take("k", 11), /"cost" must be a positive integer not above 10/);
  });

  test("shared limiter: without a store the limiter is the in-memory one, synchronous", () => {
    const limiter = createFixedWindowLimiter({ limit: 1, store: undefined, failure: "open" });
    const d = limiter.take("k");
    assert.equal(d.allowed, true);
    assert.equal(typeof limiter.peek, "function");
  });
});
