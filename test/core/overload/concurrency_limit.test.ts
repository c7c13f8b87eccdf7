import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { createConcurrencyLimit, type Permit } from "../../../src/core/overload/concurrency_limit.ts";
import { createManualClock } from "../../../src/testing/manual_clock.ts";
import { flushMicrotasks } from "../../support/flush.ts";

describe("concurrency limit", () => {
  test("concurrency limit: the request past N is refused at once with a Retry-After hint", () => {
    const limit = createConcurrencyLimit({ limit: 2 });
    const a = limit.tryAcquire();
    const b = limit.tryAcquire();
    const c = limit.tryAcquire();
    assert.ok(a.ok && b.ok);
    assert.equal(c.ok, false);
    assert.ok(!c.ok && c.reason === "shed" && c.retryAfterMs === 1000);
    assert.equal(limit.inFlight, 2);
    assert.equal(limit.waiting, 0, "never queued");
  });

  test("concurrency limit: releasing twice frees one permit only; dispose releases", () => {
    const limit = createConcurrencyLimit({ limit: 1 });
    const a = limit.tryAcquire() as Permit;
    a.release();
    a.release();
    assert.equal(limit.inFlight, 0);
    {
      using b = limit.tryAcquire() as Permit;
      assert.equal(b.ok, true);
      assert.equal(limit.inFlight, 1);
    }
    assert.equal(limit.inFlight, 0);
  });

  test("concurrency limit: with shed wait 0, acquire refuses at once", async () => {
    const limit = createConcurrencyLimit({ limit: 1 });
    limit.tryAcquire();
    const r = await limit.acquire();
    assert.equal(r.ok, false);
    assert.equal(limit.waiting, 0);
  });

  test("concurrency limit: a waiter gets the next released permit within the shed wait", async () => {
    const clock = createManualClock();
    const limit = createConcurrencyLimit({ limit: 1, shedWaitMs: 100, clock });
    const held = limit.tryAcquire() as Permit;
    const waiting = limit.acquire();
    assert.equal(limit.waiting, 1);
    clock.advance(50);
    held.release();
    const got = await waiting;
    assert.equal(got.ok, true);
    assert.equal(limit.inFlight, 1, "the permit was handed over, not re-counted");
    assert.equal(clock.pendingTimers, 0, "the wait timer was cancelled");
  });

  test("concurrency limit: a waiter is shed when the shed wait runs out", async () => {
    const clock = createManualClock();
    const limit = createConcurrencyLimit({ limit: 1, shedWaitMs: 100, clock });
    limit.tryAcquire();
    const waiting = limit.acquire();
    clock.advance(100);
    const got = await waiting;
    assert.ok(!got.ok && got.reason === "shed");
    assert.equal(limit.waiting, 0);
    assert.equal(limit.inFlight, 1);
  });

  test("concurrency limit: waiters are served newest first (LIFO)", async () => {
    const clock = createManualClock();
    const limit = createConcurrencyLimit({ limit: 1, shedWaitMs: 1000, maxWaiting: 4, clock });
    const held = limit.tryAcquire() as Permit;
    const order: string[] = [];
    const older = limit.acquire().then((r) => (order.push("older"), r));
    const newer = limit.acquire().then((r) => (order.push("newer"), r));
    held.release();
    await flushMicrotasks();
    assert.deepEqual(order, ["newer"]);
    ((await newer) as Permit).release();
    assert.ok((await older).ok);
    assert.deepEqual(order, ["newer", "older"]);
  });

  test("concurrency limit: past maxWaiting a new waiter pushes out the oldest", async () => {
    const clock = createManualClock();
    const limit = createConcurrencyLimit({ limit: 1, shedWaitMs: 1000, maxWaiting: 1, clock });
    limit.tryAcquire();
    const oldest = limit.acquire();
    void limit.acquire();
    const r = await oldest;
    assert.ok(!r.ok && r.reason === "shed");
    assert.equal(limit.waiting, 1);
  });

  test("concurrency limit: an aborted waiter leaves the queue and never takes a permit", async () => {
    const clock = createManualClock();
    const limit = createConcurrencyLimit({ limit: 1, shedWaitMs: 1000, clock });
    const held = limit.tryAcquire() as Permit;
    const ac = new AbortController();
    const waiting = limit.acquire(ac.signal);
    ac.abort();
    const r = await waiting;
    assert.ok(!r.ok && r.reason === "aborted");
    assert.equal(limit.waiting, 0);
    held.release();
    assert.equal(limit.inFlight, 0);
    const pre = new AbortController();
    pre.abort();
    limit.tryAcquire();
    assert.equal((await limit.acquire(pre.signal)).ok, false);
  });

  test("concurrency limit: Infinity counts but never refuses", () => {
    const limit = createConcurrencyLimit({ limit: Infinity });
    const permits = Array.from({ length: 10_000 }, () => limit.tryAcquire());
    assert.ok(permits.every((p) => p.ok));
    assert.equal(limit.inFlight, 10_000);
    for (const p of permits) if (p.ok) p.release();
    assert.equal(limit.inFlight, 0);
  });

  test("concurrency limit: idle() settles when the last permit is released", async () => {
    const limit = createConcurrencyLimit({ limit: 2 });
    await limit.idle();
    const a = limit.tryAcquire() as Permit;
    const b = limit.tryAcquire() as Permit;
    let idle = false;
    void limit.idle().then(() => (idle = true));
    a.release();
    await flushMicrotasks();
    assert.equal(idle, false);
    b.release();
    await flushMicrotasks();
    assert.equal(idle, true);
  });

  test("concurrency limit: bad options throw naming the field", () => {
    assert.throws(() => createConcurrencyLimit({ limit: 0 }), /"limit" must be a positive integer or Infinity: current value is 0/);
    assert.throws(() => createConcurrencyLimit({ limit: 1, shedWaitMs: -1 }), /"shedWaitMs" must be a non-negative integer/);
    assert.throws(() => createConcurrencyLimit(undefined as never), /"limit" must be a positive integer or Infinity: current value is undefined/);
    assert.throws(() => createConcurrencyLimit(42 as never), TypeError);
  });
});
