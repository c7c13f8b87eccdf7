import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { createGuard } from "../../../src/core/guard.ts";
import { createFixedWindowLimiter } from "../../../src/core/limits/fixed_window.ts";
import { createRateStore } from "../../../src/core/limits/rate_store.ts";
import { createManualClock } from "../../../src/testing/manual_clock.ts";
import type { DenyEvent } from "../../../src/core/events.ts";
import { ALLOW, createFakeBackend, DENY } from "../../support/fake_store.ts";
import { flushMicrotasks } from "../../support/flush.ts";

const from = (address: string) => [new Request("http://localhost/"), { peer: { address, port: 5555 } }] as const;

function setup(rateLimitHeaders = false) {
  const clock = createManualClock();
  const backend = createFakeBackend();
  const denials: DenyEvent[] = [];
  const store = createRateStore(backend, { clock, timeoutMs: 50 });
  const limiter = createFixedWindowLimiter({ name: "ip", limit: 5, windowMs: 60_000, clock, store });
  const guard = createGuard({ clock, rateLimits: [{ limiter }], rateLimitHeaders, onDeny: (e) => denials.push(e) });
  const handled: string[] = [];
  const fetch = guard.wrap((_r, { context }) => (handled.push(context.key!), new Response("ok")));
  return { clock, backend, denials, fetch, handled, guard };
}

describe("gate 5 over a shared store", () => {
  test("gate 5: a request waiting for the store does not hold up another request", async () => {
    const { backend, fetch, handled } = setup();
    let firstDone = false;
    const first = fetch(...from("10.0.0.1")).then((r) => ((firstDone = true), r));
    const second = fetch(...from("10.0.0.2"));
    await flushMicrotasks();
    assert.equal(backend.calls.length, 2, "both asked the store at once");
    backend.calls[1]!.resolve([ALLOW(4)]);
    assert.equal((await second).status, 200);
    assert.deepEqual(handled, ["10.0.0.2"]);
    assert.equal(firstDone, false, "the first is still waiting for its answer");
    backend.calls[0]!.resolve([ALLOW(4)]);
    assert.equal((await first).status, 200);
    assert.deepEqual(handled, ["10.0.0.2", "10.0.0.1"]);
  });

  test("gate 5: a store denial is a 429 with Retry-After and RateLimit fields, reported once with its scope", async () => {
    const { backend, fetch, denials, handled } = setup(true);
    const res = fetch(...from("10.0.0.1"));
    await flushMicrotasks();
    backend.calls[0]!.resolve([DENY(30_000)]);
    const r = await res;
    assert.equal(r.status, 429);
    assert.equal(r.headers.get("retry-after"), "30");
    assert.ok(r.headers.get("ratelimit"));
    assert.deepEqual(handled, []);
    assert.deepEqual(denials.map((d) => [d.layer, d.reason, d.scope, d.limiterClass]), [["rate", "over-limit", "ip", "ip"]]);
    const again = await fetch(...from("10.0.0.1"));
    assert.equal(again.status, 429, "the cached denial");
    assert.equal(backend.calls.length, 1, "no second round-trip");
  });

  test("gate 5: a store that does not answer costs a request the timeout, then fails closed", async () => {
    const { clock, fetch, denials } = setup();
    let status = 0;
    const res = fetch(...from("10.0.0.1")).then((r) => (status = r.status));
    await flushMicrotasks();
    clock.advance(49);
    await flushMicrotasks();
    assert.equal(status, 0);
    clock.advance(1);
    await res;
    assert.equal(status, 429);
    assert.equal(denials[0]!.reason, "limiter-error");
  });
});

describe("gate 5: RateLimit fields", () => {
  test("gate 5: with rateLimitHeaders, the fields go on an over-limit 429 only: not on a rule's failure (a key or skip that throws, a store that fails)", async () => {
    const clock = createManualClock();
    for (const rule of [{ key: () => { throw new Error("broken key"); } }, { skip: () => { throw new Error("broken skip"); } }, { skip: (() => Promise.resolve(true)) as never }]) {
      const guard = createGuard({ clock, rateLimitHeaders: true, rateLimits: [{ limiter: createFixedWindowLimiter({ limit: 1, windowMs: 60_000, clock }), ...rule }] });
      const res = await guard.wrap(() => new Response("ok"))(...from("10.0.0.1"));
      assert.deepEqual([res.status, res.headers.get("ratelimit"), res.headers.get("retry-after")], [429, null, "60"]);
      guard.dispose();
    }
    const { clock: storeClock, fetch } = setup(true);
    const failed = fetch(...from("10.0.0.1"));
    await flushMicrotasks();
    storeClock.advance(50);
    const res = await failed;
    assert.deepEqual([res.status, res.headers.get("ratelimit")], [429, null]);
    // An over-limit 429 still has them.
    const guard = createGuard({ clock, rateLimitHeaders: true, rateLimits: [{ limiter: createFixedWindowLimiter({ limit: 1, windowMs: 60_000, clock }) }] });
    const wrapped = guard.wrap(() => new Response("ok"));
    await wrapped(...from("10.0.0.1"));
    const over = await wrapped(...from("10.0.0.1"));
    assert.deepEqual([over.status, over.headers.get("ratelimit")], [429, '"default";r=0;t=60']);
    guard.dispose();
  });
});
