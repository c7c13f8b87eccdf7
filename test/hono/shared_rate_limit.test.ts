// The route-level rateLimit middleware over a shared store (src/hono/route.ts): it awaits the
// store's answer when there is one, and stays synchronous when the answer is local.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { Hono } from "hono";
import { hygiene, rateLimit } from "../../src/hono/mod.ts";
import type { HygieneEvent } from "../../src/core/events.ts";
import { createFixedWindowLimiter } from "../../src/core/limits/fixed_window.ts";
import { createRateStore } from "../../src/core/limits/rate_store.ts";
import { createManualClock } from "../../src/testing/manual_clock.ts";
import { ALLOW, createFakeBackend, DENY } from "../support/fake_store.ts";
import { flushMicrotasks } from "../support/flush.ts";
import { runtime } from "../support/runtime.ts";

describe(`hono rateLimit over a shared store (${runtime})`, () => {
  test(`hono: rateLimit waits for the store's answer, then denies from the denied-key cache with no call (${runtime})`, async () => {
    const clock = createManualClock();
    const backend = createFakeBackend();
    const limiter = createFixedWindowLimiter({ name: "auth", limit: 5, windowMs: 60_000, clock, store: createRateStore(backend, { clock }) });
    let checks = 0;
    const app = new Hono();
    app.post("/login", rateLimit({ limiter, headers: true }), (c) => (checks++, c.text("checked")));
    const env = { peer: { address: "10.0.0.1" } };
    const first = app.request("/login", { method: "POST" }, env);
    await flushMicrotasks();
    assert.equal(checks, 0, "the handler waits for the store");
    backend.calls[0]!.resolve([ALLOW(4)]);
    assert.equal((await first).status, 200);
    const second = app.request("/login", { method: "POST" }, env);
    await flushMicrotasks();
    backend.calls[1]!.resolve([DENY(30_000)]);
    const denied = await second;
    assert.equal(denied.status, 429);
    assert.equal(denied.headers.get("retry-after"), "30");
    assert.equal((await app.request("/login", { method: "POST" }, env)).status, 429);
    assert.equal(backend.calls.length, 2, "the third was denied locally");
    assert.equal(checks, 1);
  });

  test(`hono: rateLimit({ headers: true }) sends the RateLimit fields on an over-limit 429, not on one of a store that failed (${runtime})`, async () => {
    const clock = createManualClock();
    const backend = createFakeBackend();
    const limiter = createFixedWindowLimiter({ name: "auth", limit: 5, windowMs: 60_000, clock, store: createRateStore(backend, { clock }) });
    const app = new Hono();
    app.post("/login", rateLimit({ limiter, headers: true }), (c) => c.text("checked"));
    const env = { peer: { address: "10.0.0.1" } };
    const failed = app.request("/login", { method: "POST" }, env);
    await flushMicrotasks();
    backend.calls[0]!.reject(new Error("connection reset"));
    const res = await failed;
    assert.deepEqual([res.status, res.headers.get("ratelimit")], [429, null]);
    const over = app.request("/login", { method: "POST" }, { peer: { address: "10.0.0.2" } });
    await flushMicrotasks();
    backend.calls[1]!.resolve([DENY(30_000)]);
    const denied = await over;
    assert.equal(denied.status, 429);
    assert.match(denied.headers.get("ratelimit") ?? "", /^"default";r=0;t=\d+$/);
  });

  test(`hono: behind a guard, a shared limiter's refusal is one deny event, the guard's, even when the limiter has the same sink (${runtime})`, async () => {
    const clock = createManualClock();
    const backend = createFakeBackend();
    const events: HygieneEvent[] = [];
    const sink = (e: HygieneEvent) => void events.push(e);
    const limiter = createFixedWindowLimiter({ name: "auth", limit: 5, windowMs: 60_000, clock, store: createRateStore(backend, { clock }), onEvent: sink });
    const app = new Hono();
    app.use(hygiene({ clock, loadMonitor: false, onEvent: sink }));
    app.post("/login", rateLimit({ limiter }), (c) => c.text("checked"));
    const env = { peer: { address: "10.0.0.1" } };
    const denied = app.request("/login", { method: "POST" }, env);
    await flushMicrotasks();
    backend.calls[0]!.resolve([DENY(30_000)]);
    assert.equal((await denied).status, 429);
    assert.equal((await app.request("/login", { method: "POST" }, env)).status, 429, "from the denied-key cache");
    assert.deepEqual(events.filter((e) => e.type === "deny").map((e) => e.type === "deny" && [e.layer, e.scope, e.limiterClass]), [
      ["rate", "route", "auth"],
      ["rate", "route", "auth"],
    ]);
  });

  test(`hono: a route whose request ended while rateLimit waited for the store (its deadline's 408) never starts, whatever the store answers (${runtime})`, async () => {
    const clock = createManualClock();
    const backend = createFakeBackend();
    const limiter = createFixedWindowLimiter({ name: "pay", limit: 5, windowMs: 60_000, clock, store: createRateStore(backend, { clock, timeoutMs: 60_000 }) });
    let charged = 0;
    const app = new Hono();
    const mw = hygiene({ clock, loadMonitor: false, requestTimeoutMs: 1000 });
    app.use(mw);
    app.post("/charge", rateLimit({ limiter }), (c) => (charged++, c.text("charged")));
    try {
      const pending = app.request("/charge", { method: "POST" }, { peer: { address: "10.0.0.1" } });
      await flushMicrotasks();
      assert.equal(backend.open.length, 1, "waiting for the store");
      clock.advance(1020); // the deadline wheel fires within one tick
      assert.equal((await pending).status, 408);
      backend.open[0]!.resolve([ALLOW(4)]);
      await flushMicrotasks();
      assert.equal(charged, 0, "the route never ran after the client was told 408");
    } finally {
      mw.guard.dispose();
    }
  });
  test(`hono: behind a guard, a shared limiter's store fault reaches the guard's sink beside its deny event, as in the guard's own rateLimits (${runtime}; a review: it went to the limiter's own sink, and faults_total stayed 0)`, async () => {
    const clock = createManualClock();
    const backend = createFakeBackend();
    const guardEvents: HygieneEvent[] = [];
    const ownEvents: HygieneEvent[] = [];
    const limiter = createFixedWindowLimiter({ name: "auth", limit: 5, windowMs: 60_000, clock, store: createRateStore(backend, { clock }), onEvent: (e) => void ownEvents.push(e) });
    const app = new Hono();
    app.use(hygiene({ clock, loadMonitor: false, onEvent: (e) => void guardEvents.push(e) }));
    app.post("/login", rateLimit({ limiter }), (c) => c.text("checked"));
    const failed = app.request("/login", { method: "POST" }, { peer: { address: "10.0.0.1" } });
    await flushMicrotasks();
    backend.calls[0]!.reject(new Error("connection reset"));
    assert.equal((await failed).status, 429);
    assert.deepEqual(guardEvents.filter((e) => e.type !== "request").map((e) => [e.type, e.type === "fault" ? e.source : e.type === "deny" ? e.reason : ""]), [
      ["fault", "rate-store"],
      ["deny", "limiter-error"],
    ]);
    assert.deepEqual(ownEvents, [], "nothing in the limiter's own sink");
  });

});
