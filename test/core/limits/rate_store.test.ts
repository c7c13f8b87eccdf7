import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { createRateStore, type RateStoreCheck } from "../../../src/core/limits/rate_store.ts";
import { createManualClock } from "../../../src/testing/manual_clock.ts";
import type { HygieneEvent } from "../../../src/core/events.ts";
import { ALLOW, createFakeBackend, DENY } from "../../support/fake_store.ts";
import { flushMicrotasks } from "../../support/flush.ts";

const CHECK: RateStoreCheck = { algorithm: "fixed-window", limiter: "ip", key: "k", cost: 1, limit: 10, windowMs: 1000, intervalMs: 1000 };

function setup(options: { timeoutMs?: number; maxPending?: number; fallbackAfter?: number; probeIntervalMs?: number } = {}) {
  const clock = createManualClock();
  const backend = createFakeBackend();
  const events: HygieneEvent[] = [];
  const store = createRateStore(backend, { name: "fake", clock, onEvent: (e) => events.push(e), ...options });
  return { clock, backend, events, store };
}

describe("rate store", () => {
  test("rate store: defaults are a 50 ms timeout, 256 calls outstanding, fallback after 5 failures", () => {
    const store = createRateStore(createFakeBackend());
    assert.equal(store.timeoutMs, 50);
    assert.equal(store.maxPending, 256);
    assert.equal(store.state, "ok");
    assert.equal(store.name, undefined);
  });

  test("rate store: options are validated when the store is created", () => {
    const backend = createFakeBackend();
    assert.throws(() => createRateStore({} as never), /must have a take\(checks\) method/);
    assert.throws(() => createRateStore(backend, { timeoutMs: 0 }), /Cannot create rate store as "timeoutMs" must be a positive integer: current value is 0/);
    assert.throws(() => createRateStore(backend, { timeoutMs: 2 ** 31 }), RangeError);
    assert.throws(() => createRateStore(backend, { maxPending: 0 }), /"maxPending" must be a positive integer/);
    assert.throws(() => createRateStore(backend, { fallbackAfter: 1.5 }), /"fallbackAfter"/);

    assert.throws(() => createRateStore(backend, { probeIntervalMs: -1 }), /"probeIntervalMs"/);
    assert.throws(() => createRateStore(backend, { name: 3 as never }), TypeError);
  });

  test("rate store: a reply within the timeout is handed on as it is", async () => {
    const { backend, store } = setup();
    const call = store.call([CHECK]);
    assert.ok(call instanceof Promise);
    assert.deepEqual(backend.calls[0]!.checks, [CHECK]);
    backend.calls[0]!.resolve([ALLOW(9)], 123);
    assert.deepEqual(await call, { now: 123, results: [ALLOW(9)] });
    assert.equal(store.pending, 0);
  });

  test("rate store: a backend that never answers fails the call at the timeout, and its slot stays taken", async () => {
    const { clock, store } = setup({ timeoutMs: 40 });
    let answer: unknown;
    void (store.call([CHECK]) as Promise<unknown>).then((a) => (answer = a));
    clock.advance(39);
    await flushMicrotasks();
    assert.equal(answer, undefined, "not before the timeout");
    clock.advance(1);
    await flushMicrotasks();
    const failed = answer as unknown as { failure: string; error: DOMException };
    assert.equal(failed.failure, "timeout");
    assert.equal(failed.error.name, "TimeoutError");
    assert.equal(store.pending, 1, "the call is still outstanding at the backend");
  });

  test("rate store: calls made at different times time out each at its own deadline, under one timer", async () => {
    const { clock, store } = setup({ timeoutMs: 50, fallbackAfter: 100 });
    let settled = 0;
    for (let i = 0; i < 3; i++) {
      void (store.call([CHECK]) as Promise<unknown>).then(() => settled++);
      if (i < 2) clock.advance(20);
    }
    assert.equal(clock.pendingTimers, 1, "one timer for every outstanding call");
    const counts: number[] = [];
    for (const to of [49, 50, 69, 70, 89, 90]) {
      clock.advance(to - clock.now());
      await flushMicrotasks();
      counts.push(settled);
    }
    assert.deepEqual(counts, [0, 1, 1, 2, 2, 3], "made at 0, 20 and 40: timed out at 50, 70 and 90");
  });

  test("rate store: a rejection or a reply that does not fit the call is an error, never a throw", async () => {
    const { backend, store } = setup();
    const a = store.call([CHECK]) as Promise<unknown>;
    backend.calls[0]!.reject(new Error("READONLY"));
    assert.deepEqual(await a, { failure: "error", error: new Error("READONLY") });
    const b = store.call([CHECK, CHECK]) as Promise<{ failure: string; error: unknown }>;
    backend.calls[1]!.resolve([ALLOW()]);
    const r = await b;
    assert.equal(r.failure, "error");
    assert.ok(r.error instanceof TypeError);
    const c = store.call([CHECK]) as Promise<{ failure: string }>;
    backend.calls[2]!.resolve([{ allowed: true, retryAfterMs: NaN, remaining: 1, resetMs: 1 }]);
    assert.equal((await c).failure, "error");
    const throwing = createRateStore({ take: () => { throw new Error("sync"); } });
    assert.equal(((await throwing.call([CHECK])) as { failure: string }).failure, "error");
  });

  test("rate store: past maxPending outstanding calls a call is refused at once, without reaching the backend", async () => {
    const { backend, store, events } = setup({ maxPending: 2, fallbackAfter: 1 });
    store.call([CHECK]);
    store.call([CHECK]);
    for (let i = 0; i < 10; i++) assert.deepEqual(store.call([CHECK]), { failure: "saturated", error: undefined });
    assert.equal(backend.calls.length, 2);
    assert.equal(store.state, "ok", "saturation alone does not open the breaker");
    assert.deepEqual(events, []);
    backend.calls[0]!.resolve([ALLOW()]);
    await flushMicrotasks();
    assert.ok(store.call([CHECK]) instanceof Promise, "a settled call frees its slot");
  });

  test("rate store: with maxPending below 5 and no fallbackAfter, a hung backend makes it fall back after maxPending timeouts", async () => {
    const { clock, store, events } = setup({ maxPending: 3, timeoutMs: 10 });
    const calls = Array.from({ length: 3 }, () => store.call([CHECK]));
    assert.equal(store.call([CHECK]), store.call([CHECK]), "saturated: refused at once");
    clock.advance(10);
    for (const c of calls) assert.equal(((await c) as { failure: string }).failure, "timeout");
    assert.equal(store.state, "fallback", "the three timeouts made it fall back (the refused calls did not count)");
    assert.equal(events.filter((e) => e.type === "store").length, 1);
  });

  test("rate store: after fallbackAfter consecutive failures it falls back, once, with an event", async () => {
    const { clock, backend, store, events } = setup({ fallbackAfter: 3, timeoutMs: 10 });
    const failures = [store.call([CHECK]), store.call([CHECK])] as Promise<unknown>[];
    backend.calls[0]!.reject(new Error("down"));
    backend.calls[1]!.reject(new Error("down"));
    await Promise.all(failures);
    assert.equal(store.state, "ok");
    const ok = store.call([CHECK]) as Promise<unknown>;
    backend.calls[2]!.resolve([ALLOW()]);
    await ok;
    // A success resets the count: three more in a row are needed.
    for (let i = 0; i < 2; i++) {
      const p = store.call([CHECK]) as Promise<unknown>;
      backend.calls.at(-1)!.reject(new Error("down"));
      await p;
    }
    assert.equal(store.state, "ok");
    const last = store.call([CHECK]) as Promise<unknown>;
    clock.advance(10);
    await last;
    assert.equal(store.state, "fallback");
    assert.equal(events.length, 1);
    const e = events[0] as { type: string; state: string; store: string; failures: number; error: DOMException };
    assert.deepEqual([e.type, e.state, e.store, e.failures, e.error.name], ["store", "fallback", "fake", 3, "TimeoutError"]);
    const calls = backend.calls.length;
    assert.deepEqual(store.call([CHECK]), { failure: "fallback", error: undefined });
    assert.equal(backend.calls.length, calls, "no call while falling back");
  });

  test("rate store: while falling back one probe goes through per interval; its success recovers", async () => {
    const { clock, backend, store, events } = setup({ fallbackAfter: 1, probeIntervalMs: 1000 });
    const first = store.call([CHECK]) as Promise<unknown>;
    backend.calls[0]!.reject(new Error("down"));
    await first;
    assert.equal(store.state, "fallback");
    clock.advance(999);
    assert.deepEqual(store.call([CHECK]), { failure: "fallback", error: undefined });
    clock.advance(1);
    const probe = store.call([CHECK]);
    assert.ok(probe instanceof Promise, "the probe is a real call");
    assert.deepEqual(store.call([CHECK]), { failure: "fallback", error: undefined }, "one probe at a time");
    backend.calls[1]!.reject(new Error("still down"));
    await probe;
    assert.equal(store.state, "fallback");
    clock.advance(999);
    assert.deepEqual(store.call([CHECK]), { failure: "fallback", error: undefined }, "a failed probe restarts the interval");
    clock.advance(1);
    const second = store.call([CHECK]) as Promise<unknown>;
    backend.calls[2]!.resolve([ALLOW()]);
    await second;
    assert.equal(store.state, "ok");
    assert.deepEqual(events.map((e) => (e as { state: string }).state), ["fallback", "recovered"]);
    assert.ok(store.call([CHECK]) instanceof Promise);
  });

  test("rate store: a reply that only denies (nothing written) is no proof of health: it neither resets the failures nor ends a fallback as a probe", async () => {
    // A Redis that refuses writes (READONLY after a failover, OOM) still answers a denial.
    const { clock, backend, store, events } = setup({ fallbackAfter: 3, probeIntervalMs: 1000 });
    const answer = async (i: number) => {
      const p = store.call([CHECK]) as Promise<unknown>;
      const call = backend.calls.at(-1)!;
      if (i % 2 === 1) call.resolve([DENY(500)]); // an abusive key's first denial
      else call.reject(new Error("READONLY You can't write against a read only replica."));
      await p;
    };
    for (let i = 0; i < 5; i++) await answer(i); // fail, deny, fail, deny, fail
    assert.equal(store.state, "fallback", "three failures, denials between them");
    clock.advance(1000);
    const probe = store.call([CHECK]) as Promise<unknown>;
    backend.calls.at(-1)!.resolve([DENY(500)]);
    await probe;
    assert.equal(store.state, "fallback", "a probe that only denies proves nothing written");
    const next = store.call([CHECK]);
    assert.ok(next instanceof Promise, "the next call probes at once");
    backend.calls.at(-1)!.resolve([ALLOW()]);
    await next;
    assert.equal(store.state, "ok");
    assert.deepEqual(events.map((e) => (e as { state: string }).state), ["fallback", "recovered"]);
  });

  test("rate store: a late answer of a call sent before the fallback does not end it; only a probe does", async () => {
    const { backend, store } = setup({ fallbackAfter: 1 });
    const early = store.call([CHECK]) as Promise<unknown>;
    const failing = store.call([CHECK]) as Promise<unknown>;
    backend.calls[1]!.reject(new Error("down"));
    await failing;
    assert.equal(store.state, "fallback");
    backend.calls[0]!.resolve([ALLOW()]);
    await early;
    assert.equal(store.state, "fallback");
  });

  test("rate store: no probe is sent while maxPending calls are still outstanding", async () => {
    const { clock, backend, store } = setup({ fallbackAfter: 1, maxPending: 1, timeoutMs: 10, probeIntervalMs: 100 });
    const hung = store.call([CHECK]) as Promise<unknown>;
    clock.advance(10);
    await hung;
    assert.equal(store.state, "fallback");
    clock.advance(100);
    assert.deepEqual(store.call([CHECK]), { failure: "fallback", error: undefined });
    backend.calls[0]!.resolve([ALLOW()]);
    await flushMicrotasks();
    assert.ok(store.call([CHECK]) instanceof Promise, "the probe goes once the slot is free");
  });
});
