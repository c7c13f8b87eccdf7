// A request reading a slow body gives up its place in the concurrency limit
// (src/core/request/_body_waits.ts and the limit's `_park`), driven with the manual clock.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { _createConcurrencyLimit, type Permit, type Refusal } from "../../../src/core/overload/concurrency_limit.ts";
import { createAdaptiveLimit } from "../../../src/core/overload/adaptive_limit.ts";
import { _BodyWaits, PARK_AFTER_MS, PARK_AT_DUE_MS } from "../../../src/core/request/_body_waits.ts";
import { createManualClock } from "../../../src/testing/manual_clock.ts";
import { flushMicrotasks } from "../../support/flush.ts";

/** An adaptive limit of `limit` that records its samples' latencies. */
function recording(limit: number, maxLimit = 100) {
  const samples: number[] = [];
  return { samples, adaptive: { limit, baselineMs: undefined, minLimit: 1, maxLimit, sample: (ms: number) => void samples.push(ms), stalled() {} } };
}

function setup(limit = 1, shedWaitMs = 500) {
  const clock = createManualClock();
  const { samples, adaptive } = recording(limit);
  const concurrency = _createConcurrencyLimit({ limit: adaptive, shedWaitMs, clock });
  const waits = new _BodyWaits(clock, concurrency);
  const outcomes: (Permit | Refusal)[] = [];
  const wait = () => concurrency.acquire(undefined, clock.now()).then((p) => void outcomes.push(p));
  return { clock, concurrency, waits, samples, outcomes, wait };
}

describe("body waits", () => {
  test("a parked permit is still held (inFlight, idle()) but not counted against the limit; unparked it counts over the limit, and it is never a latency sample", async () => {
    const { clock, concurrency, samples } = setup(1);
    const upload = concurrency.tryAcquire();
    assert.ok(upload.ok);
    assert.equal(concurrency.tryAcquire().ok, false, "the limit of one is full");
    concurrency._park(upload);
    concurrency._park(upload); // twice: a no-op
    assert.equal(concurrency.inFlight, 1, "still held");
    let idle = false;
    void concurrency.idle().then(() => (idle = true));
    const fast = concurrency.tryAcquire();
    assert.ok(fast.ok, "its place is free");
    assert.equal(concurrency.inFlight, 2);
    clock.advance(5);
    fast.complete();
    assert.deepEqual(samples, [5]);
    concurrency._unpark(upload); // its body arrived: counted again, over the limit
    assert.equal(concurrency.tryAcquire().ok, false, "the unparked permit fills the limit again");
    clock.advance(100);
    upload.complete();
    assert.deepEqual(samples, [5], "the upload's latency is its client's: no sample");
    await flushMicrotasks();
    assert.equal(idle, true, "idle once the parked permit came back");
    assert.equal(concurrency.inFlight, 0);
    // A permit given back while parked, and parking after it was given back: nothing counts twice.
    const a = concurrency.tryAcquire();
    assert.ok(a.ok);
    concurrency._park(a);
    a.release();
    concurrency._unpark(a);
    concurrency._park(a);
    assert.equal(concurrency.inFlight, 0);
    const b = concurrency.tryAcquire();
    const c = concurrency.tryAcquire();
    assert.ok(b.ok && !c.ok, "one place, as before");
  });

  test("at most maxWaiting permits are parked at once, and never past maxLimit held in all (a fixed limit: never while full); one not parked is unaffected by an unpark and still a sample", () => {
    const clock = createManualClock();
    const { samples, adaptive } = recording(3);
    const concurrency = _createConcurrencyLimit({ limit: adaptive, shedWaitMs: 500, maxWaiting: 2, clock });
    const permits = [concurrency.tryAcquire(), concurrency.tryAcquire(), concurrency.tryAcquire()] as Permit[];
    assert.deepEqual(permits.map((p) => concurrency._park(p)), [true, true, false]);
    assert.equal(concurrency.inFlight, 3);
    assert.ok(concurrency.tryAcquire().ok, "two places freed");
    assert.ok(concurrency.tryAcquire().ok);
    assert.equal(concurrency.tryAcquire().ok, false, "the third was not parked");
    concurrency._unpark(permits[2]!); // never parked: nothing changes
    clock.advance(7);
    permits[2]!.complete();
    assert.deepEqual(samples, [7], "still a sample");
    assert.ok(concurrency.tryAcquire().ok, "and its place came back");
    // maxLimit: 4 held (2 parked) at a limit of 2 and a maxLimit of 4: no more parking.
    const capped = _createConcurrencyLimit({ limit: recording(2, 4).adaptive, shedWaitMs: 500, clock });
    const a = capped.tryAcquire() as Permit, b = capped.tryAcquire() as Permit;
    assert.deepEqual([capped._park(a), capped._park(b)], [true, true]);
    const c = capped.tryAcquire() as Permit, d = capped.tryAcquire() as Permit;
    assert.ok(c.ok && d.ok);
    assert.equal(capped._park(c), false, "4 held in all: the pool behind the handler sees no more");
    // A fixed limit is such a bound itself.
    const fixed = _createConcurrencyLimit({ limit: 2, shedWaitMs: 500, clock });
    const f = fixed.tryAcquire() as Permit;
    fixed.tryAcquire();
    assert.equal(fixed._park(f), false);
    assert.equal(fixed.tryAcquire().ok, false);
  });

  test("a limit grown while permits are parked admits no waiter past maxLimit held in all (a review: the real adaptive limit at 1 of 2, one parked, grew at a wait bound and 3 were held)", () => {
    const clock = createManualClock(1000);
    const adaptive = createAdaptiveLimit({ initialLimit: 1, maxLimit: 2 });
    const concurrency = _createConcurrencyLimit({ limit: adaptive, shedWaitMs: 100, clock });
    const upload = concurrency.tryAcquire() as Permit;
    assert.ok(upload.ok);
    assert.equal(concurrency._park(upload), true, "its body waits on its client");
    const next = concurrency.tryAcquire();
    assert.ok(next.ok, "its place went on");
    const outcomes: string[] = [];
    for (const name of ["c", "d"]) {
      const now = concurrency._acquireFor(name, (ctx, p) => void outcomes.push(`${ctx}:${p.ok ? "permit" : p.reason}`));
      assert.equal(now, undefined, "it waits");
    }
    clock.advance(100); // no permit came back for a wait bound: the limit grows (to its maxLimit, 2)
    assert.equal(concurrency.limit, 2);
    assert.ok(concurrency.inFlight <= 2, `held in all ${concurrency.inFlight}, parked included: never past maxLimit 2`);
    assert.deepEqual(outcomes, ["c:queue-timeout", "d:queue-timeout"], "no place within maxLimit for either");
    assert.equal(concurrency.tryAcquire().ok, false, "nor for a new one");
    concurrency._unpark(upload);
    assert.equal(concurrency.inFlight, 2);
    upload.complete();
    assert.ok(concurrency.tryAcquire().ok, "its place came back");
  });

  test(`a request finding the limit full parks the permits of requests that have read their bodies ${PARK_AFTER_MS} ms with a read pending — not a younger one, nor one not waiting on its client`, async () => {
    const { clock, concurrency, waits, outcomes, wait } = setup(2);
    const upload = concurrency.tryAcquire();
    const other = concurrency.tryAcquire();
    assert.ok(upload.ok && other.ok);
    const slow = waits.read(upload);
    const quick = waits.read(other);
    slow.start(); // a read waits on the client
    quick.start();
    quick.end(); // bytes came: no read pending now
    clock.advance(PARK_AFTER_MS - 1);
    void wait(); // the limit is full, the reads not old enough: it waits
    await flushMicrotasks();
    assert.deepEqual(outcomes, []);
    assert.equal(concurrency.waiting, 1);
    clock.advance(1); // the timer armed for the pending read: parked, and the waiter takes its place
    await flushMicrotasks();
    assert.equal(outcomes.length, 1);
    assert.equal((outcomes[0] as unknown as Permit).ok, true);
    assert.equal(slow.parked, true);
    assert.equal(quick.parked, false, "no read pending: not waiting on its client");
    assert.equal(concurrency.inFlight, 3);
    // Its body arrives: counted again (over the limit), so the next request finds it full.
    slow.end();
    slow.arrived();
    assert.equal(concurrency.tryAcquire().ok, false);
    waits.dispose();
  });

  test(`when a waiter's wait is up, a request that has read its body ${PARK_AT_DUE_MS} ms with a read pending gives up its place to it — only while the loop keeps up (this object's last timer ran on time within a second) and the CPU reading does not say work queues`, async () => {
    for (const kase of ["keeps up", "queueing", "no reading"] as const) {
      const clock = createManualClock();
      const { adaptive } = recording(1);
      const concurrency = _createConcurrencyLimit({ limit: { ...adaptive, queueing: () => kase === "queueing" }, shedWaitMs: 500, clock });
      const waits = new _BodyWaits(clock, concurrency);
      const outcomes: (Permit | Refusal)[] = [];
      const wait = () => void concurrency.acquire(undefined, clock.now()).then((p) => void outcomes.push(p));
      const first = concurrency.tryAcquire();
      assert.ok(first.ok);
      const firstRead = waits.read(first);
      if (kase === "no reading") {
        wait(); // at 0, due at 500; no read pending: no timer, so no reading of the loop
        clock.advance(475);
        firstRead.start(); // 25 ms before the waiter is due
        clock.advance(30);
        await flushMicrotasks();
        assert.deepEqual(outcomes.map((o) => o.ok || o.reason), ["queue-timeout"], kase);
        assert.equal(firstRead.parked, false);
      } else if (kase === "queueing") {
        firstRead.start();
        wait(); // the timer comes back at PARK_AFTER_MS, on time, but the CPU reading says work queues
        clock.advance(505);
        await flushMicrotasks();
        assert.deepEqual(outcomes.map((o) => o.ok || o.reason), ["queue-timeout"], kase);
        assert.equal(firstRead.parked, false, "a storm's pending read is a loop turn late, not a slow client");
      } else {
        firstRead.start();
        clock.advance(5);
        wait();
        clock.advance(PARK_AFTER_MS); // the timer parks the first (the loop's reading: on time)
        await flushMicrotasks();
        assert.equal(firstRead.parked, true);
        const second = outcomes.shift() as Permit;
        assert.ok(second.ok);
        wait(); // waits for the second, which has not read its body yet: no timer
        clock.advance(470);
        waits.read(second).start(); // 30 ms before the waiter is due: under PARK_AFTER_MS
        clock.advance(30);
        await flushMicrotasks();
        assert.deepEqual(outcomes.map((o) => o.ok), [true], "admitted in the slow body's place at its wait bound");
      }
      waits.dispose();
    }
  });

  test("reads that are not pending cost no timer, and a full limit with no pending read arms none", async () => {
    const { clock, concurrency, waits, outcomes, wait } = setup(1, 100);
    const p = concurrency.tryAcquire();
    assert.ok(p.ok);
    const r = waits.read(p);
    r.start();
    r.end();
    void wait();
    assert.equal(clock.pendingTimers, 1, "only the waiter's own wait bound");
    clock.advance(100);
    await flushMicrotasks();
    assert.deepEqual(outcomes.map((o) => o.ok), [false]);
    waits.dispose();
  });
});
