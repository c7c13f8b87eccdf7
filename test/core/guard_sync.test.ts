import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { _guardedFetch, createGuard } from "../../src/core/guard.ts";
import { createManualClock } from "../../src/testing/manual_clock.ts";
import { createHost } from "../../src/core/host/create_host.ts";
import type { DenyEvent, HygieneEvent } from "../../src/core/events.ts";

// The serving fetch (what adapters and hygiene() run) answers without a promise whenever it
// can: a refusal decided by the synchronous gates, and a handler that returned its Response.
// Runtimes take their fast path for a Response that is not a promise (@hono/node-server's
// cached response, Bun and Deno skip a promise reaction).
describe("guard: synchronous answers", () => {
  const req = (path = "/") => new Request(`http://localhost${path}`);

  test("a refusal of the synchronous gates is answered synchronously, with its deny event", () => {
    const denies: DenyEvent[] = [];
    const guard = createGuard({ concurrencyLimit: 1, shedWaitMs: 0, clock: createManualClock(), onDeny: (e) => denies.push(e) });
    const fetch = _guardedFetch(guard, (r) => (r.url.endsWith("/hold") ? new Promise<Response>(() => {}) : new Response("ok")));
    const held = fetch(req("/hold"));
    assert.ok(held instanceof Promise);
    const refused = fetch(req());
    assert.ok(refused instanceof Response, "not a promise");
    assert.equal(refused.status, 503);
    assert.equal(refused.headers.get("retry-after"), "1");
    assert.deepEqual(denies.map((e) => `${e.layer}/${e.reason}`), ["concurrency/shed"]);
    assert.equal(guard.inFlight, 1);
    guard.dispose();
  });

  test("a handler's synchronous Response is passed on synchronously, its permit given back", () => {
    const events: HygieneEvent[] = [];
    const guard = createGuard({ concurrencyLimit: 1, shedWaitMs: 0, requestTimeoutMs: 1_000, clock: createManualClock(), onEvent: (e) => events.push(e) });
    const fetch = _guardedFetch(guard, () => new Response("ok", { status: 201 }));
    const res = fetch(req());
    assert.ok(res instanceof Response, "not a promise");
    assert.equal(res.status, 201);
    assert.equal(guard.inFlight, 0);
    assert.deepEqual(events.filter((e) => e.type === "request").map((e) => (e as { status: number }).status), [201]);
    // The permit is free again: the next request is admitted.
    assert.equal((fetch(req()) as Response).status, 201);
    guard.dispose();
  });

  test("a handler that throws synchronously is answered 500 synchronously, the error reported once", () => {
    const errors: unknown[] = [];
    const guard = createGuard({ clock: createManualClock(), onError: (e) => errors.push(e) });
    const boom = new Error("boom");
    const res = _guardedFetch(guard, () => {
      throw boom;
    })(req());
    assert.ok(res instanceof Response);
    assert.equal(res.status, 500);
    assert.deepEqual(errors, [boom]);
    assert.equal(guard.inFlight, 0);
    guard.dispose();
  });

  test("an asynchronous handler is still answered through a promise", async () => {
    const guard = createGuard({ clock: createManualClock() });
    const out = _guardedFetch(guard, async () => new Response("later"))(req());
    assert.ok(out instanceof Promise);
    assert.equal(await (await out).text(), "later");
    assert.equal(guard.inFlight, 0);
    guard.dispose();
  });

  test("the public wrap() always returns a promise, also for a refusal and a synchronous answer", async () => {
    const guard = createGuard({ concurrencyLimit: 1, shedWaitMs: 0, clock: createManualClock() });
    const wrapped = guard.wrap((r) => (r.url.endsWith("/hold") ? new Promise<Response>(() => {}) : new Response("ok")));
    const first = wrapped(req());
    assert.ok(first instanceof Promise);
    assert.equal((await first).status, 200);
    void wrapped(req("/hold"));
    const refused = wrapped(req());
    assert.ok(refused instanceof Promise);
    assert.equal((await refused).status, 503);
    guard.dispose();
  });

  test("with the info flag the handler also gets the adapter's info (hygiene() builds its fetch once)", () => {
    const guard = createGuard({ clock: createManualClock() });
    const seen: unknown[] = [];
    const fetch = _guardedFetch(guard, (_r, _view, info) => {
      seen.push(info);
      return new Response("ok");
    }, true);
    const info = { peer: { address: "127.0.0.1" } };
    fetch(req(), info);
    assert.deepEqual(seen, [info]);
    guard.dispose();
  });

  test("a synchronous answer arms no deadline; an asynchronous one is cut at its deadline from arrival", async () => {
    const clock = createManualClock();
    const guard = createGuard({ requestTimeoutMs: 1_000, loadMonitor: false, clock });
    const sync = _guardedFetch(guard, () => new Response("ok"));
    for (let i = 0; i < 3; i++) assert.equal((sync(req()) as Response).status, 200);
    assert.equal(clock.pendingTimers, 0, "no wheel tick was started");
    const slow = _guardedFetch(guard, () => new Promise<Response>(() => {}));
    const answered = slow(req());
    assert.ok(clock.pendingTimers > 0);
    clock.advance(990);
    clock.advance(30);
    assert.equal((await answered).status, 408);
    guard.dispose();
  });

  test("with a Host that clones responses, each refusal is its own copy of the generic answer", async () => {
    const clock = createManualClock();
    const host = createHost({ cloneResponses: true });
    const guard = createGuard({ concurrencyLimit: 1, shedWaitMs: 0, loadMonitor: false, clock }, { ...host, clock });
    const fetch = _guardedFetch(guard, () => new Promise<Response>(() => {}));
    void fetch(req());
    const first = fetch(req()) as Response;
    const second = fetch(req()) as Response;
    assert.notEqual(first, second);
    first.headers.set("connection", "close");
    for (const res of [first, second]) {
      assert.equal(res.status, 503);
      assert.equal(res.headers.get("retry-after"), "1");
      assert.equal(res.headers.get("cache-control"), "no-store");
      assert.equal(await res.text(), "Service Unavailable");
    }
    assert.equal(second.headers.get("connection"), null, "a change to one answer never reaches the next");
    assert.equal((fetch(req()) as Response).headers.get("connection"), null);
    guard.dispose();
  });

  test("createHost refuses a cloneResponses that is not a boolean", () => {
    assert.throws(() => createHost({ cloneResponses: "yes" as never }), TypeError);
    assert.equal(createHost({}).cloneResponses, undefined);
    assert.equal(createHost({ cloneResponses: true }).cloneResponses, true);
  });

  test("an adapter's word that the request has no body (declaresBody: false) spares every read of it up to the handler", () => {
    const reads: string[] = [];
    const real = req();
    const request = new Proxy(real, {
      get(target, key) {
        reads.push(String(key));
        const value = Reflect.get(target, key, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const guard = createGuard({
      concurrencyLimit: 8,
      requestTimeoutMs: 1_000,
      bodyLimitBytes: 1024,
      loadMonitor: false,
      inFlightPerKey: { perKey: 4 },
      clock: createManualClock(),
    });
    let seen = -1;
    const res = _guardedFetch(guard, () => {
      seen = reads.length;
      return new Response("ok");
    })(request, { declaresBody: false, peer: { address: "192.0.2.1", port: 1, family: "IPv4" } });
    assert.equal((res as Response).status, 200);
    assert.equal(seen, 0, `read before the handler: ${reads.join(", ")}`);
    guard.dispose();
  });
});

