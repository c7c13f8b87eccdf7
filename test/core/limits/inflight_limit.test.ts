import { describe, test } from "node:test";
import assert from "node:assert/strict";
import {
  createInFlightLimiter,
  DEFAULT_INFLIGHT_SHED_WAIT_MS,
  type InFlightLimiter,
  isPeerBusyError,
  PeerBusyError,
  type Slot,
} from "../../../src/core/limits/inflight_limit.ts";
import { createManualClock } from "../../../src/testing/manual_clock.ts";
import type { HygieneEvent } from "../../../src/core/events.ts";
import { countMapOps } from "../../support/map_ops.ts";

function assertEmpty(limiter: InFlightLimiter, keys: string[]) {
  for (const key of keys) assert.equal(limiter.inFlight(key), 0, `inFlight(${key})`);
  assert.equal(limiter.overallInFlight, 0, "overall");
  assert.equal(limiter.size.value, 0, "per-key table");
  assert.equal(limiter.waiting, 0, "waiting");
}

describe("in-flight limit", () => {
  test("in-flight limit: defaults are 16 per key, 1024 overall, no shed wait", () => {
    const limiter = createInFlightLimiter();
    assert.equal(limiter.perKey, 16);
    assert.equal(limiter.overall, 1024);
    assert.equal(limiter.shedWaitMs, 0);
    assert.equal(DEFAULT_INFLIGHT_SHED_WAIT_MS, 250);
    assert.equal(limiter.size.capacity, 4096);
  });

  test("in-flight limit: without an overall cap, slots are counted overall, per key capped, and each released once — with or without a shed wait", async () => {
    for (const shedWaitMs of [0, 50]) {
      const clock = createManualClock();
      const limiter = createInFlightLimiter({ perKey: 2, overall: Infinity, shedWaitMs, clock });
      const a = limiter.tryAcquire("k") as Slot;
      const b = (await limiter.enter("k", undefined)) as Slot;
      const c = limiter.tryAcquire("j") as Slot;
      assert.ok(a.ok && b.ok && c.ok);
      assert.equal(limiter.overallInFlight, 3);
      assert.equal(limiter.tryAcquire("k").ok, false, "the key's cap still holds");
      const waiter = limiter.enter("k", undefined);
      if (shedWaitMs > 0) {
        assert.ok(waiter instanceof Promise, "over its key's cap it waits for one of the key's slots");
        a.release();
        const handed = (await waiter) as Slot;
        assert.ok(handed.ok, "the released slot went to the waiter");
        assert.equal(limiter.overallInFlight, 3);
        handed.release();
      } else {
        assert.equal((waiter as { ok: boolean }).ok, false);
        a.release();
      }
      a.release();
      assert.equal(limiter.overallInFlight, 2, "a second release gives nothing back");
      b[Symbol.dispose]();
      c.release();
      assertEmpty(limiter, ["k", "j"]);
    }
  });

  test("in-flight limit: without a shed wait, a key at its cap is refused at once as peer-busy (429)", async () => {
    const clock = createManualClock();
    const limiter = createInFlightLimiter({ perKey: 2, overall: 10, clock });
    const a = limiter.tryAcquire("k") as Slot;
    const b = (await limiter.acquire("k")) as Slot;
    assert.ok(a.ok && b.ok);
    const refused = await limiter.acquire("k");
    assert.deepEqual(refused, { ok: false, reason: "peer-busy", status: 429, retryAfterMs: 1000 });
    assert.equal(limiter.waiting, 0, "without a shed wait a busy peer never waits");
    assert.equal(limiter.inFlight("k"), 2);
    assert.equal(limiter.tryAcquire("other").ok, true, "other keys are unaffected");
  });

  test("in-flight limit: release when the work settles returns every count to 0; release is idempotent", () => {
    const limiter = createInFlightLimiter({ perKey: 2, overall: 2 });
    const a = limiter.tryAcquire("x") as Slot;
    const b = limiter.tryAcquire("y") as Slot;
    assert.equal(limiter.overallInFlight, 2);
    assert.equal(limiter.size.value, 2);
    a.release();
    a.release();
    assert.equal(limiter.inFlight("x"), 0);
    assert.equal(limiter.overallInFlight, 1);
    {
      using c = limiter.tryAcquire("y") as Slot;
      assert.equal(limiter.inFlight("y"), 2);
      void c;
    }
    b[Symbol.dispose]();
    assertEmpty(limiter, ["x", "y"]);
  });

  test("in-flight limit: a full lane without a shed wait refuses at once as busy (503) and returns the reservation", async () => {
    const limiter = createInFlightLimiter({ perKey: 4, overall: 1 });
    const held = limiter.tryAcquire("a") as Slot;
    assert.deepEqual(limiter.tryAcquire("b"), { ok: false, reason: "busy", status: 503, retryAfterMs: 1000 });
    assert.deepEqual(await limiter.acquire("b"), { ok: false, reason: "busy", status: 503, retryAfterMs: 1000 });
    assert.equal(limiter.inFlight("b"), 0);
    held.release();
    assertEmpty(limiter, ["a", "b"]);
  });

  test("in-flight limit: the key's slot is reserved before waiting on the lane, and refused after the shed wait", async () => {
    const clock = createManualClock();
    const limiter = createInFlightLimiter({ perKey: 1, overall: 1, shedWaitMs: 100, clock });
    const held = limiter.tryAcquire("a") as Slot;
    const waiting = limiter.acquire("b");
    assert.equal(limiter.inFlight("b"), 1, "reserved while waiting");
    assert.equal(limiter.waiting, 1);
    const second = limiter.acquire("b");
    assert.equal(limiter.waiting, 2, "b's second request waits for b's own slot, not for the lane");
    clock.advance(100);
    const refused = await waiting;
    assert.ok(!refused.ok && refused.reason === "busy");
    const alsoRefused = await second;
    assert.ok(!alsoRefused.ok && alsoRefused.reason === "peer-busy", "its own wait ended too");
    held.release();
    assertEmpty(limiter, ["a", "b"]);
  });

  test("in-flight limit: a waiter gets the lane permit released within the shed wait", async () => {
    const clock = createManualClock();
    const limiter = createInFlightLimiter({ perKey: 1, overall: 1, shedWaitMs: DEFAULT_INFLIGHT_SHED_WAIT_MS, clock });
    const held = limiter.tryAcquire("a") as Slot;
    const waiting = limiter.acquire("b");
    clock.advance(200);
    held.release();
    const got = await waiting;
    assert.equal(got.ok, true);
    assert.equal(limiter.inFlight("a"), 0);
    assert.equal(limiter.overallInFlight, 1);
    (got as Slot).release();
    assertEmpty(limiter, ["a", "b"]);
  });

  test("in-flight limit: a request abandoned mid-wait (signal abort) returns its reservation", async () => {
    const clock = createManualClock();
    const limiter = createInFlightLimiter({ perKey: 1, overall: 1, shedWaitMs: 1000, clock });
    const held = limiter.tryAcquire("a") as Slot;
    const controller = new AbortController();
    const waiting = limiter.acquire("b", controller.signal);
    assert.equal(limiter.inFlight("b"), 1);
    controller.abort();
    const result = await waiting;
    assert.ok(!result.ok && result.reason === "aborted");
    assert.equal(limiter.inFlight("b"), 0);
    assert.equal(limiter.waiting, 0);
    held.release();
    assertEmpty(limiter, ["a", "b"]);
    assert.equal((await limiter.acquire("c", controller.signal)).ok, false, "an already aborted signal takes no slot");
    assertEmpty(limiter, ["c"]);
  });

  test("in-flight limit: a cap of 0 is clamped to 1", () => {
    const limiter = createInFlightLimiter({ perKey: 0, overall: 0 });
    assert.equal(limiter.perKey, 1);
    assert.equal(limiter.overall, 1);
    assert.equal(limiter.tryAcquire("a").ok, true);
    assert.equal(limiter.tryAcquire("b").ok, false);
  });

  test("in-flight limit: an unseen key past maxKeys is refused as busy", () => {
    const limiter = createInFlightLimiter({ maxKeys: 2, overall: 10 });
    limiter.tryAcquire("a");
    limiter.tryAcquire("b");
    const r = limiter.tryAcquire("c");
    assert.ok(!r.ok && r.reason === "busy");
    assert.equal(limiter.size.value, 2);
    assert.equal(limiter.overallInFlight, 2);
  });

  test("in-flight limit: keys back at 0 leave the gauge at once and the table when it fills", () => {
    const limiter = createInFlightLimiter({ maxKeys: 2, overall: 10 });
    (limiter.tryAcquire("a") as Slot).release();
    const b = limiter.tryAcquire("b") as Slot;
    assert.equal(limiter.size.value, 1, "a is no longer counted");
    const c = limiter.tryAcquire("c");
    assert.equal(c.ok, true, "the sweep dropped a and made room");
    assert.equal(limiter.size.value, 2);
    const d = limiter.tryAcquire("d");
    assert.ok(!d.ok && d.reason === "busy", "b and c are in flight: nothing to sweep");
    b.release();
    (c as Slot).release();
    assertEmpty(limiter, ["a", "b", "c", "d"]);
  });

  test("in-flight limit: refusals emit deny events on the peer layer with no key", async () => {
    const events: HygieneEvent[] = [];
    const limiter = createInFlightLimiter({ perKey: 1, overall: 1, name: "ip", onEvent: (e) => events.push(e) });
    limiter.tryAcquire("secret");
    limiter.tryAcquire("secret");
    await limiter.acquire("other");
    assert.deepEqual(events, [
      { type: "deny", layer: "peer", reason: "peer-busy", status: 429, retryAfterMs: 1000, limiterClass: "ip" },
      { type: "deny", layer: "peer", reason: "busy", status: 503, retryAfterMs: 1000, limiterClass: "ip" },
    ]);
  });

  test("in-flight limit: an internal error fails closed, returns the reservation and emits a fault", async () => {
    const events: HygieneEvent[] = [];
    const clock = createManualClock();
    const limiter = createInFlightLimiter({ perKey: 2, overall: 1, shedWaitMs: 100, clock, onEvent: (e) => events.push(e) });
    const held = limiter.tryAcquire("a") as Slot;
    const broken = { aborted: false, addEventListener() { throw new Error("broken signal"); }, removeEventListener() {} };
    const result = await limiter.acquire("b", broken as unknown as AbortSignal);
    assert.ok(!result.ok && result.reason === "limiter-error" && result.status === 503);
    assert.equal(limiter.inFlight("b"), 0);
    assert.ok(events.some((e) => e.type === "fault" && e.failed === "closed"));
    assert.ok(events.some((e) => e.type === "deny" && e.reason === "limiter-error"));
    held.release();
    clock.advance(100);
    assertEmpty(limiter, ["a", "b"]);
  });

  test("in-flight limit: bad options throw; PeerBusyError carries its code", () => {
    assert.throws(() => createInFlightLimiter({ perKey: -1 }), RangeError);
    assert.throws(() => createInFlightLimiter({ overall: 1.5 }), RangeError);
    assert.throws(() => createInFlightLimiter({ shedWaitMs: -5 }), /"shedWaitMs" must be a non-negative integer/);
    const error = new PeerBusyError({ retryAfterMs: 1000, limit: 16 });
    assert.ok(isPeerBusyError(error) && error.code === "PEER_BUSY" && error.retryAfterMs === 1000);
  });

  test("in-flight limit: a churning flood at a full table of busy keys touches a bounded number of entries per unseen key", () => {
    const n = 4096;
    const limiter = createInFlightLimiter({ maxKeys: n, overall: Infinity });
    for (let i = 0; i < n - 1; i++) assert.ok(limiter.tryAcquire(`busy${i}`).ok);
    const ops = countMapOps();
    try {
      let served = 0;
      for (let i = 0; i < 2 * n; i++) {
        const slot = limiter.tryAcquire(`new${i}`);
        if (slot.ok) {
          served++;
          slot.release();
        }
      }
      const perKey = ops.count / (2 * n);
      assert.equal(served, 2 * n, "the one idle key is found and dropped every time");
      assert.ok(perKey >= 1, "the count sees the table (at least one lookup per key)");
      assert.ok(perKey <= 8, `${perKey} Map operations per unseen key (a scan is thousands)`);
    } finally {
      ops.restore();
    }
  });

  test("in-flight limit: with a shed wait, a key at its cap waits for its own slot and takes it when one frees", async () => {
    const clock = createManualClock();
    const limiter = createInFlightLimiter({ perKey: 1, overall: Infinity, shedWaitMs: 100, clock });
    const held = limiter.tryAcquire("k") as Slot;
    const waiting = limiter.acquire("k");
    assert.equal(limiter.waiting, 1);
    clock.advance(60);
    held.release();
    const slot = await waiting;
    assert.ok(slot.ok, "the freed slot went to the waiter");
    assert.equal(limiter.inFlight("k"), 1);
    assert.equal(limiter.waiting, 0);
    const late = limiter.acquire("k");
    clock.advance(100);
    assert.deepEqual(await late, { ok: false, reason: "peer-busy", status: 429, retryAfterMs: 1000 });
    slot.release();
    assertEmpty(limiter, ["k"]);
  });

  test("in-flight limit: a key's waiters are bounded by its cap (the oldest is refused) and leave at once on abort", async () => {
    const clock = createManualClock();
    const limiter = createInFlightLimiter({ perKey: 2, overall: Infinity, shedWaitMs: 100, clock });
    const held = [limiter.tryAcquire("k") as Slot, limiter.tryAcquire("k") as Slot];
    const oldest = limiter.acquire("k");
    const ac = new AbortController();
    const leaving = limiter.acquire("k", ac.signal);
    const newest = limiter.acquire("k");
    assert.deepEqual(await oldest, { ok: false, reason: "peer-busy", status: 429, retryAfterMs: 1000 });
    assert.equal(limiter.waiting, 2);
    ac.abort();
    assert.equal((await leaving).ok, false);
    assert.equal(limiter.waiting, 1, "the client that left is removed at once");
    held[0]!.release();
    const got = await newest;
    assert.ok(got.ok);
    got.release();
    held[1]!.release();
    assertEmpty(limiter, ["k"]);
    assert.equal(clock.pendingTimers, 0, "no wait timer left behind");
  });

  test("in-flight limit: a key wait that cannot be set up (a broken signal) fails closed and queues nothing", async () => {
    const events: HygieneEvent[] = [];
    const clock = createManualClock();
    const limiter = createInFlightLimiter({ perKey: 1, overall: Infinity, shedWaitMs: 100, clock, onEvent: (e) => events.push(e) });
    const held = limiter.tryAcquire("a") as Slot;
    const broken = { aborted: false, addEventListener() { throw new Error("broken signal"); }, removeEventListener() {} };
    const result = await limiter.acquire("a", broken as unknown as AbortSignal);
    assert.ok(!result.ok && result.reason === "limiter-error" && result.status === 503);
    assert.equal(limiter.waiting, 0);
    assert.equal(clock.pendingTimers, 0, "its timer was cancelled");
    assert.equal(limiter.inFlight("a"), 1, "the holder's slot is untouched");
    assert.ok(events.some((e) => e.type === "fault" && e.failed === "closed"));
    held.release();
    assertEmpty(limiter, ["a"]);
  });
});
