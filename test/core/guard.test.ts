import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { createGuard, type GuardOptions } from "../../src/core/guard.ts";
import { createManualClock, type ManualClock } from "../../src/testing/manual_clock.ts";
import type { DenyEvent, HygieneEvent } from "../../src/core/events.ts";
import type { RequestContext } from "../../src/core/request/request_context.ts";
import { flushMicrotasks } from "../support/flush.ts";
import { countingBody, post } from "../support/bodies.ts";
import { createFixedWindowLimiter } from "../../src/core/limits/fixed_window.ts";
import { createTokenBucketLimiter } from "../../src/core/limits/token_bucket.ts";
import type { RateLimiter } from "../../src/core/limits/rate_limiter.ts";
import { _GATES, type Gate } from "../../src/core/gates/gate.ts";
import { createRateStore } from "../../src/core/limits/rate_store.ts";
import { ALLOW, createFakeBackend } from "../support/fake_store.ts";

const GET = (path = "/") => new Request(`http://localhost${path}`);

function deferred<T = void>() {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

function setup(options: GuardOptions = {}) {
  const clock: ManualClock = createManualClock();
  const denials: DenyEvent[] = [];
  const events: HygieneEvent[] = [];
  const errors: unknown[] = [];
  const guard = createGuard({
    clock,
    onDeny: (e) => denials.push(e),
    onEvent: (e) => events.push(e),
    onError: (e) => errors.push(e),
    ...options,
  });
  return { clock, guard, denials, events, errors };
}

describe("guard: concurrency", () => {
  test("guard: with no queue (shedWaitMs 0), N+k simultaneous requests → k immediate 503s with Retry-After, the N complete", async () => {
    const { guard, denials } = setup({ concurrencyLimit: 3, shedWaitMs: 0 });
    const gate = deferred();
    const fetch = guard.wrap(async () => (await gate.promise, new Response("ok")));
    const all = Array.from({ length: 5 }, () => fetch(GET()));
    await flushMicrotasks();
    assert.equal(guard.inFlight, 3);
    const shed = await Promise.all(all.slice(3));
    for (const res of shed) {
      assert.equal(res.status, 503);
      assert.equal(res.headers.get("retry-after"), "1");
      assert.equal(await res.text(), "Service Unavailable");
    }
    gate.resolve();
    for (const res of await Promise.all(all.slice(0, 3))) assert.equal(res.status, 200);
    assert.equal(guard.inFlight, 0);
    assert.deepEqual(denials.map((d) => [d.layer, d.reason, d.status]), [["concurrency", "shed", 503], ["concurrency", "shed", 503]]);
  });

  test("guard: a permit is held until the handler's promise settles, not when a Response exists", async () => {
    const { guard } = setup({ concurrencyLimit: 1, shedWaitMs: 0 });
    const gate = deferred();
    const response = new Response("early");
    const fetch = guard.wrap(() => gate.promise.then(() => response));
    const pending = fetch(GET());
    await flushMicrotasks();
    assert.equal(guard.inFlight, 1);
    assert.equal((await fetch(GET())).status, 503);
    gate.resolve();
    assert.equal(await pending, response);
    assert.equal(guard.inFlight, 0);
  });

  test("guard: a sync throw and a rejection each answer a generic 500, go to onError, and free the permit", async () => {
    const { guard, errors } = setup({ concurrencyLimit: 1, shedWaitMs: 0 });
    const boom = new Error("secret detail");
    for (const handler of [() => { throw boom; }, () => Promise.reject(boom)]) {
      const res = await guard.wrap(handler)(GET());
      assert.equal(res.status, 500);
      assert.equal(await res.text(), "Internal Server Error");
      assert.equal(guard.inFlight, 0);
    }
    assert.deepEqual(errors, [boom, boom]);
  });

  test("guard: a handler that fails because its client left (its wait on the request's signal rejected with its reason) is not reported to onError; another failure after the client left is", async () => {
    const { guard, errors } = setup({ concurrencyLimit: 1, loadMonitor: false });
    const left = new AbortController();
    const res = guard.wrap((request) => new Promise<Response>((_, reject) => request.signal.addEventListener("abort", () => reject(request.signal.reason))))(new Request("http://localhost/", { signal: left.signal }));
    await flushMicrotasks();
    left.abort("Client connection prematurely closed.");
    assert.equal((await res).status, 500, "answered, though nobody reads it");
    assert.deepEqual(errors, []);
    assert.equal(guard.inFlight, 0);
    // A handler that fails while its client is still there is reported as before.
    await guard.wrap(() => Promise.reject(new Error("boom")))(GET());
    assert.equal(errors.length, 1);
    // So is a failure of its own after the client left: only the abort itself is not one.
    const gone = new AbortController();
    let fail!: () => void;
    const late = guard.wrap(() => new Promise<Response>((_, reject) => (fail = () => reject(new Error("upstream failed")))))(new Request("http://localhost/", { signal: gone.signal }));
    await flushMicrotasks();
    gone.abort();
    fail();
    assert.equal((await late).status, 500);
    assert.equal(errors.length, 2);
    assert.match(String(errors[1]), /upstream failed/);
  });

  test("guard: a handler whose body read failed (the connection broke mid-body) is not reported to onError, and counts as outcome aborted (its client left); any other 5xx sent counts as outcome error", async () => {
    const { guard, errors, events } = setup({ loadMonitor: false });
    // The runtime's body source fails mid-read, as node's "aborted" or Deno's BadResource does.
    const broken = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(new Uint8Array(10));
      },
      pull(c) {
        c.error(new Error("aborted"));
      },
    });
    const upload = new Request("http://localhost/upload", { method: "POST", body: broken, headers: { "content-length": "1000" }, duplex: "half" } as RequestInit);
    const res = await guard.wrap(async (request) => new Response(String((await request.arrayBuffer()).byteLength)))(upload);
    assert.equal(res.status, 500);
    assert.deepEqual(errors, [], "the client's leaving is not the handler's failure");
    // A handler's own 503 is a 5xx sent: outcome error, as a throw's 500 is.
    await guard.wrap(() => new Response("busy", { status: 503 }))(GET());
    const outcomes = events.filter((e) => e.type === "request").map((e) => [(e as { status: number }).status, (e as { outcome: string }).outcome]);
    assert.deepEqual(outcomes, [[500, "aborted"], [503, "error"]]);
  });

  test("guard: an onError hook that throws is logged; the request is still answered 500 and its permit freed", async () => {
    const logged: unknown[] = [];
    const guard = createGuard({
      clock: createManualClock(),
      concurrencyLimit: 1,
      log: (record) => void logged.push(record),
      onError: () => {
        throw new Error("hook down");
      },
    });
    const boom = new Error("handler bug");
    // A synchronous throw, a rejection, and a value that is not a Response.
    const handlers = [() => { throw boom; }, () => Promise.reject(boom), () => "not a Response" as unknown as Response];
    for (const handler of handlers) {
      const res = await guard.wrap(handler)(GET());
      assert.equal(res.status, 500);
      assert.equal(guard.inFlight, 0);
    }
    assert.deepEqual(logged.map((r) => [(r as { msg: string }).msg, ((r as { error: Error }).error).message]), [
      ["onError hook failed", "hook down"],
      ["onError hook failed", "hook down"],
      ["onError hook failed", "hook down"],
    ]);
    guard.dispose();
    // An async hook that rejects: logged the same way, not an unhandled rejection.
    const asyncLogged: unknown[] = [];
    const asyncGuard = createGuard({ clock: createManualClock(), log: (record) => void asyncLogged.push(record), onError: () => Promise.reject(new Error("async hook down")) });
    assert.equal((await asyncGuard.wrap(() => Promise.reject(boom))(GET())).status, 500);
    await flushMicrotasks();
    assert.deepEqual(asyncLogged.map((r) => [(r as { msg: string }).msg, ((r as { error: Error }).error).message]), [["onError hook failed", "async hook down"]]);
    asyncGuard.dispose();
  });

  test("guard: a handler that throws or rejects with a value whose reads throw (a revoked Proxy) is answered 500, what it held given back (a review: the rejection escaped and ended the process)", async () => {
    const errors: unknown[] = [];
    const events: string[] = [];
    const guard = createGuard({
      clock: createManualClock(),
      concurrencyLimit: 1,
      loadMonitor: false,
      onError: (error) => void errors.push(error),
      onEvent: (e) => void (e.type === "request" && events.push(`${e.status} ${e.outcome}`)),
    });
    const revoked = () => {
      const { proxy, revoke } = Proxy.revocable({}, {});
      revoke();
      return proxy;
    };
    const hostile = () => Object.defineProperty({}, "name", { get: () => { throw new Error("no name"); } });
    // A Response whose status cannot be read: making its answer throws (the last resort's 500, reported too: a diff review).
    const unreadable = () => new Proxy(new Response("x"), { get: (target, p) => (p === "status" ? (() => { throw new Error("no status"); })() : Reflect.get(target, p)) });
    const handlers = [() => { throw revoked(); }, () => Promise.reject(revoked()), async () => { throw hostile(); }, async () => unreadable()];
    for (const handler of handlers) {
      const res = await guard.wrap(handler)(GET());
      assert.equal(res.status, 500);
      assert.equal(guard.inFlight, 0);
    }
    assert.equal(errors.length, 4, "each reached onError");
    assert.deepEqual(events, ["500 error", "500 error", "500 error", "500 error"], "each reported once");
    guard.dispose();
  });

  test("guard: a handler that returns Response.error() (status 0, which no runtime sends) is answered 500 and reported as an error, not a 0 \"ok\" (a review)", async () => {
    const errors: unknown[] = [];
    const events: { status: number; outcome: string }[] = [];
    const guard = createGuard({
      clock: createManualClock(),
      loadMonitor: false,
      onError: (error) => void errors.push(error),
      onEvent: (e) => void (e.type === "request" && events.push({ status: e.status, outcome: e.outcome })),
    });
    for (const handler of [() => Response.error(), async () => Response.error()]) {
      const res = await guard.wrap(handler)(GET());
      assert.equal(res.status, 500);
      assert.equal(guard.inFlight, 0);
    }
    assert.deepEqual(events, [{ status: 500, outcome: "error" }, { status: 500, outcome: "error" }]);
    assert.equal(errors.length, 2);
    assert.match(String(errors[0]), /Response\.error\(\)/);
    guard.dispose();
  });

  test("guard: a gate that throws after the permit was taken (the body cap reading a URL it cannot) frees the permit; a Request the runtime cannot copy is refused 400", async () => {
    const { guard, denials } = setup({ concurrencyLimit: 1, shedWaitMs: 0, loadMonitor: false, bodyLimitBytes: 64, routeBodyLimits: [{ path: "/big", bytes: 128 }] });
    const fetch = guard.wrap(async (request) => new Response(await request.text()));
    // The body cap is the first gate to read the URL here (its route caps): a getter that throws there.
    const broken = post("hello", {}, "http://localhost/x");
    Object.defineProperty(broken, "url", { get: () => { throw new TypeError("no URL"); } });
    await assert.rejects(fetch(broken), /no URL/);
    assert.equal(guard.inFlight, 0, "the permit came back");
    // Bun's request with an invalid Host has a relative URL, and no Request can be built from
    // it; here, a request-shaped object that new Request() cannot take either.
    const relative = { url: "/x", method: "POST", headers: new Headers({ "content-length": "5" }), body: new Blob(["hello"]).stream(), signal: new AbortController().signal } as unknown as Request;
    const res = await fetch(relative);
    assert.equal(res.status, 400);
    assert.equal(res.headers.get("connection"), "close");
    assert.deepEqual(denials.map((e) => [e.layer, e.reason, e.status]), [["framing", "malformed-target", 400]]);
    assert.equal(guard.inFlight, 0);
    assert.equal((await fetch(post("hello", {}, "http://localhost/x"))).status, 200, "the one permit is free");
  });

  test("guard: a shed wait lets a request take the next free permit, and sheds it when the wait runs out", async () => {
    const { guard, clock } = setup({ concurrencyLimit: 1, shedWaitMs: 100 });
    const gate = deferred();
    const fetch = guard.wrap(async () => (await gate.promise, new Response("ok")));
    const first = fetch(GET());
    const waiting = fetch(GET());
    await flushMicrotasks();
    gate.resolve();
    assert.equal((await first).status, 200);
    assert.equal((await waiting).status, 200);
    const hold = deferred();
    const slow = guard.wrap(async () => (await hold.promise, new Response("ok")));
    const held = slow(GET());
    const late = slow(GET());
    await flushMicrotasks();
    clock.advance(100);
    assert.equal((await late).status, 503);
    hold.resolve();
    await held;
    assert.equal(guard.inFlight, 0);
  });
});

describe("guard: request timeout", () => {
  test("guard: the deadline answers 408 and fires the handler's signal; an ignoring handler is a straggler holding its permit", async () => {
    const { guard, clock, denials, events } = setup({ requestTimeoutMs: 1000, drainTimeoutMs: 2000 });
    const gate = deferred();
    let seen: RequestContext | undefined;
    const fetch = guard.wrap(async (_req, { context }) => {
      seen = context;
      const signal = context.signal;
      await gate.promise; // ignores the signal
      assert.equal(signal.aborted, true);
      return new Response("late");
    });
    const pending = fetch(GET());
    await flushMicrotasks();
    clock.advance(999);
    assert.equal(seen!.signal.aborted, false);
    clock.advance(20); // the wheel fires within one tick of the deadline
    const res = await pending;
    assert.equal(res.status, 408);
    assert.equal(res.headers.get("connection"), "close", "a 408 closes its connection (RFC 9110 §15.5.9)");
    assert.equal(await res.text(), "Request Timeout");
    assert.equal(seen!.signal.aborted, true);
    assert.equal((seen!.signal.reason as DOMException).name, "TimeoutError");
    assert.equal(guard.stragglers, 1);
    assert.equal(guard.inFlight, 1, "the straggler keeps its permit");
    gate.resolve();
    await flushMicrotasks();
    assert.equal(guard.stragglers, 0);
    assert.equal(guard.inFlight, 0);
    assert.deepEqual(denials.map((d) => d.layer), ["timeout"]);
    assert.ok(events.some((e) => e.type === "request" && e.outcome === "timeout" && e.status === 408));
  });

  test("guard: a handler that honours its signal settles at the deadline and leaves nothing in flight", async () => {
    const { guard, clock } = setup({ requestTimeoutMs: 50, drainTimeoutMs: 100 });
    const fetch = guard.wrap((_req, { context }) =>
      new Promise<Response>((_, reject) => context.signal.addEventListener("abort", () => reject(context.signal.reason)))
    );
    const pending = fetch(GET());
    await flushMicrotasks();
    clock.advance(60);
    assert.equal((await pending).status, 408);
    await flushMicrotasks();
    assert.equal(guard.inFlight, 0);
    assert.equal(guard.stragglers, 0);
  });

  test("guard: a handler blocked reading a body that never arrives is released at the deadline", async () => {
    const { guard, clock } = setup({ requestTimeoutMs: 100, drainTimeoutMs: 200 });
    let cancelled = false;
    const stalled = new ReadableStream<Uint8Array>({ pull: () => new Promise(() => {}), cancel: () => void (cancelled = true) }, { highWaterMark: 0 });
    let readError: unknown;
    const pending = guard.wrap(async (req) => {
      try {
        await req.text();
      } catch (error) {
        readError = error;
        throw error;
      }
      return new Response("read");
    })(post(stalled));
    await flushMicrotasks();
    clock.advance(120);
    assert.equal((await pending).status, 408);
    await flushMicrotasks();
    assert.equal((readError as DOMException)?.name, "TimeoutError", "the pending read rejected with the deadline");
    assert.equal(cancelled, true, "no more is read from the source");
    assert.equal(guard.inFlight, 0);
    assert.equal(guard.stragglers, 0);
  });

  test("guard: a route can disable its timeout (SSE) or change it", async () => {
    const { guard, clock } = setup({ requestTimeoutMs: 1000, drainTimeoutMs: 2000 });
    const gate = deferred();
    const stream = guard.wrap(async (_req, { context }) => {
      context.timeoutMs = Infinity;
      await gate.promise;
      return new Response("stream ended");
    });
    const sse = stream(GET("/events"));
    await flushMicrotasks();
    clock.advance(60_000);
    gate.resolve();
    assert.equal((await sse).status, 200);

    const shorter = guard.wrap(async (_req, { context }) => {
      context.timeoutMs = 100;
      await new Promise(() => {});
      return new Response("never");
    });
    const cut = shorter(GET("/work"));
    await flushMicrotasks();
    clock.advance(120);
    assert.equal((await cut).status, 408);
  });

  test("guard: a zero route timeout is refused with a RangeError naming the field", async () => {
    const { guard, errors } = setup();
    const res = await guard.wrap((_r, { context }) => {
      context.timeoutMs = 0;
      return new Response("unreachable");
    })(GET());
    assert.equal(res.status, 500);
    assert.match(String(errors[0]), /RangeError: Cannot set the request timeout as "timeoutMs" must be a positive integer or Infinity: current value is 0/);
  });

  test("guard: a client that disconnects fires the handler's signal; the permit is freed when it settles", async () => {
    const { guard } = setup();
    const client = new AbortController();
    let reason: unknown;
    const fetch = guard.wrap((_req, { context }) =>
      new Promise<Response>((_, reject) =>
        context.signal.addEventListener("abort", () => reject((reason = context.signal.reason)))
      )
    );
    const pending = fetch(new Request("http://localhost/", { signal: client.signal }));
    await flushMicrotasks();
    assert.equal(guard.inFlight, 1);
    client.abort();
    await pending;
    assert.equal(guard.inFlight, 0);
    assert.ok(reason !== undefined);
  });
});

describe("guard: body cap", () => {
  const readers: [string, (r: Request) => Promise<unknown>][] = [
    ["text", (r) => r.text()],
    ["json", (r) => r.json()],
    ["arrayBuffer", (r) => r.arrayBuffer()],
    ["formData", (r) => r.formData()],
    ["the raw stream", async (r) => { for await (const _ of r.body!) { /* drain */ } }],
  ];

  test("guard: a Content-Length over the cap → 413 before a byte is read", async () => {
    const { guard, denials } = setup({ bodyLimitBytes: 10 });
    const source = countingBody(10, 10);
    const res = await guard.wrap(async (req) => (await req.text(), new Response("read")))(
      post(source.stream, { "content-length": "100" }),
    );
    assert.equal(res.status, 413);
    assert.equal(source.pulls, 0);
    assert.equal(source.cancelled, true);
    assert.deepEqual(denials.map((d) => [d.layer, d.reason, d.status]), [["body", "over-cap", 413]]);
  });

  for (const bad of ["abc", "-1", "", "1e3", "99999999999999999999", "5, 6", " 12x"]) {
    test(`guard: Content-Length ${JSON.stringify(bad)} → 400 and the handler never runs`, async () => {
      const { guard } = setup({ bodyLimitBytes: 1000 });
      let ran = false;
      const res = await guard.wrap(() => ((ran = true), new Response("ran")))(post("hello", { "content-length": bad }));
      assert.equal(res.status, 400);
      assert.equal(ran, false);
      assert.equal(guard.inFlight, 0);
    });
  }

  test("guard: repeated identical Content-Length values are one length", async () => {
    const { guard } = setup({ bodyLimitBytes: 1000 });
    const res = await guard.wrap(async (req) => new Response(await req.text()))(post("hello", { "content-length": "5, 5" }));
    assert.equal(res.status, 200);
  });

  for (const [how, read] of readers) {
    test(`guard: a chunked body passing the cap → 413 when read via ${how}, and no more is read`, async () => {
      const { guard } = setup({ bodyLimitBytes: 25 });
      const source = countingBody(100, 10);
      // A form content type, so formData() gets as far as reading the body on every runtime.
      const form = { "content-type": "application/x-www-form-urlencoded" };
      const res = await guard.wrap(async (req) => (await read(req), new Response("read")))(post(source.stream, form));
      assert.equal(res.status, 413);
      assert.ok(source.pulls <= 4, `pulled ${source.pulls} chunks`);
      assert.equal(source.cancelled, true);
      assert.equal(guard.inFlight, 0);
    });
  }

  test("guard: a handler that catches the overflow and answers 400 still yields 413", async () => {
    const { guard } = setup({ bodyLimitBytes: 5 });
    const res = await guard.wrap(async (req) => {
      try {
        await req.json();
        return new Response("parsed");
      } catch {
        return new Response("Malformed JSON", { status: 400 });
      }
    })(post(countingBody(10, 10).stream));
    assert.equal(res.status, 413);
  });

  test("guard: Content-Length with Transfer-Encoding is ignored and the body is counted", async () => {
    const { guard } = setup({ bodyLimitBytes: 15 });
    const source = countingBody(3, 10);
    const res = await guard.wrap(async (req) => (await req.text(), new Response("read")))(
      post(source.stream, { "content-length": "1", "transfer-encoding": "chunked" }),
    );
    assert.equal(res.status, 413);
    assert.equal(source.pulls, 2);
  });

  test("guard: a body exactly at the cap passes; the handler sees every byte", async () => {
    const { guard } = setup({ bodyLimitBytes: 30 });
    const res = await guard.wrap(async (req) => new Response(String((await req.arrayBuffer()).byteLength)))(
      post(countingBody(3, 10).stream),
    );
    assert.equal(res.status, 200);
    assert.equal(await res.text(), "30");
  });

  test("guard: a route-level cap wins over the service-wide one, larger (declared in routeBodyLimits) or smaller", async () => {
    const { guard } = setup({ bodyLimitBytes: 10, routeBodyLimits: [{ path: "/upload", bytes: 100 }] });
    const upload = guard.wrap(async (req, { context }) => {
      context.bodyLimitBytes = 100;
      return new Response(String((await req.arrayBuffer()).byteLength));
    });
    const big = await upload(post(countingBody(5, 10).stream, { "content-length": "50" }));
    assert.equal(big.status, 200);
    assert.equal(await big.text(), "50");
    const tight = guard.wrap(async (req, { context }) => {
      context.bodyLimitBytes = 2;
      return new Response(await req.text());
    });
    assert.equal((await tight(post("hello"))).status, 413);
  });

  test("body cap: a declared length over the cap is refused before the handler runs, even one that never reads the body", async () => {
    const { guard, denials } = setup({ bodyLimitBytes: 10 });
    let calls = 0;
    const source = countingBody(10, 10);
    const res = await guard.wrap(() => (calls++, new Response("ignored the body")))(post(source.stream, { "content-length": "100" }));
    assert.equal(res.status, 413);
    assert.equal(calls, 0);
    assert.equal(source.pulls, 0);
    assert.equal(guard.inFlight, 0);
    assert.deepEqual(denials.map((d) => [d.layer, d.reason, d.status]), [["body", "over-cap", 413]]);
  });

  test("body cap: a declared length over 64 KiB is refused with Connection: close; a small one keeps the connection", async () => {
    const { guard } = setup({ bodyLimitBytes: 10 });
    const fetch = guard.wrap(() => new Response("ignored"));
    const big = await fetch(post("x", { "content-length": String(64 * 1024 + 1) }));
    assert.equal(big.status, 413);
    assert.equal(big.headers.get("connection"), "close");
    const atBound = await fetch(post("x", { "content-length": String(64 * 1024) }));
    assert.equal(atBound.status, 413);
    assert.equal(atBound.headers.get("connection"), null, "a rest of exactly 64 KiB is read, not closed for");
    const small = await fetch(post("x".repeat(100), { "content-length": "100" }));
    assert.equal(small.status, 413);
    assert.equal(small.headers.get("connection"), null);
  });

  test("body cap: a chunked body passing the cap is answered 413 with Connection: close (the rest is unknown)", async () => {
    const { guard } = setup({ bodyLimitBytes: 25 });
    const res = await guard.wrap(async (req) => (await req.text(), new Response("read")))(post(countingBody(100, 10).stream));
    assert.equal(res.status, 413);
    assert.equal(res.headers.get("connection"), "close");
  });

  test("body cap: a handler that leaves over 64 KiB (or a chunked rest) unread is answered with Connection: close; a read or small body keeps the connection", async () => {
    const { guard } = setup();
    const ignore = guard.wrap(() => new Response("ignored", { headers: { "x-app": "1" } }));
    const read = guard.wrap(async (req) => new Response(String((await req.arrayBuffer()).byteLength)));
    const big = { "content-length": String(70 * 1024) };
    const ignored = await ignore(post(countingBody(70, 1024).stream, big));
    assert.equal(ignored.headers.get("connection"), "close");
    assert.equal(ignored.headers.get("x-app"), "1");
    assert.equal(await ignored.text(), "ignored");
    assert.equal((await ignore(post(countingBody(1, 10).stream, { "transfer-encoding": "chunked" }))).headers.get("connection"), "close");
    assert.equal((await ignore(post("x".repeat(100), { "content-length": "100" }))).headers.get("connection"), null);
    const whole = await read(post(countingBody(70, 1024).stream, big));
    assert.equal(await whole.text(), String(70 * 1024));
    assert.equal(whole.headers.get("connection"), null);
  });

  test("body cap: a GET whose adapter says it declares a body has its length checked before the handler runs; other GETs never have their headers read", async () => {
    const { guard } = setup({ bodyLimitBytes: 10 });
    let calls = 0;
    const fetch = guard.wrap(() => (calls++, new Response("ok")));
    const get = new Request("http://localhost/", { headers: { "content-length": "100" } });
    assert.equal((await fetch(get, { declaresBody: true })).status, 413);
    assert.equal(calls, 0);
    assert.equal((await fetch(get)).status, 200, "without the adapter's word a GET's headers are not read");
  });

  test("body cap: a raise declared in routeBodyLimits applies before the handler; other paths keep the service cap", async () => {
    const { guard } = setup({ bodyLimitBytes: 10, routeBodyLimits: [{ path: "/upload", method: "post", bytes: 100 }] });
    let calls = 0;
    const fetch = guard.wrap(async (req, { context }) => (calls++, new Response(`${context.bodyLimitBytes}:${(await req.arrayBuffer()).byteLength}`)));
    const up = await fetch(post(countingBody(5, 10).stream, { "content-length": "50" }));
    assert.equal(await up.text(), "100:50");
    const other = await fetch(post(countingBody(5, 10).stream, { "content-length": "50" }, "http://localhost/other"));
    assert.equal(other.status, 413);
    const tooBig = await fetch(post(countingBody(20, 10).stream, { "content-length": "200" }));
    assert.equal(tooBig.status, 413);
    assert.equal(calls, 1);
  });

  test("body cap: a route prefix (trailing *) and a method filter select the cap", async () => {
    const { guard } = setup({ bodyLimitBytes: 10, routeBodyLimits: [{ path: "/files/*", method: "PUT", bytes: 100 }] });
    const fetch = guard.wrap(async (req) => new Response(String((await req.arrayBuffer()).byteLength)));
    const put = (url: string) => new Request(url, { method: "PUT", body: "x".repeat(50), headers: { "content-length": "50" } });
    assert.equal((await fetch(put("http://localhost/files/a/b?x=1"))).status, 200);
    assert.equal((await fetch(put("http://localhost/files"))).status, 200, "/files/* covers /files itself");
    assert.equal((await fetch(put("http://localhost/filesx"))).status, 413);
    assert.equal((await fetch(post("x".repeat(50), { "content-length": "50" }, "http://localhost/files/a"))).status, 413);
  });

  test("body cap: a route lowering the cap in its context refuses a declared length over it (413, deny event)", async () => {
    const { guard, denials } = setup({ bodyLimitBytes: 100 });
    const res = await guard.wrap(async (req, { context }) => {
      context.bodyLimitBytes = 5;
      return new Response(await req.text());
    })(post("x".repeat(50), { "content-length": "50" }));
    assert.equal(res.status, 413);
    assert.deepEqual(denials.map((d) => [d.layer, d.reason, d.status]), [["body", "over-cap", 413]]);
  });

  test("body cap: a raise in the context above the cap applied before the handler throws a RangeError saying where to declare it", async () => {
    const { guard, errors } = setup({ bodyLimitBytes: 10 });
    const res = await guard.wrap((_req, { context }) => {
      context.bodyLimitBytes = 1000;
      return new Response("raised");
    })(post("x"));
    assert.equal(res.status, 500);
    assert.ok(errors[0] instanceof RangeError);
    assert.match((errors[0] as Error).message, /"bodyLimitBytes" must be at most 10 .*routeBodyLimits.*current value is 1000/);
    // One byte over is a raise too; the cap itself is not.
    const byOne = await guard.wrap((_req, { context }) => {
      context.bodyLimitBytes = 11;
      return new Response("raised");
    })(post("x"));
    assert.equal(byOne.status, 500);
    assert.match((errors[1] as Error).message, /current value is 11/);
    const same = await guard.wrap((_req, { context }) => {
      context.bodyLimitBytes = 10;
      return new Response("kept");
    })(post("x"));
    assert.equal(same.status, 200);
  });

  for (const bad of [NaN, -1, 0, 1.5, "10", null, -Infinity]) {
    test(`body cap: context.bodyLimitBytes = ${typeof bad === "string" ? JSON.stringify(bad) : String(bad)} throws a RangeError naming the field`, async () => {
      const { guard } = setup({ bodyLimitBytes: 100 });
      let thrown: unknown;
      const res = await guard.wrap(async (req, { context }) => {
        try {
          context.bodyLimitBytes = bad as never;
        } catch (error) {
          thrown = error;
        }
        return new Response(String((await req.arrayBuffer()).byteLength));
      })(post("x".repeat(50)));
      assert.ok(thrown instanceof RangeError, `threw ${String(thrown)}`);
      assert.match(thrown.message, /^Cannot set the body cap as "bodyLimitBytes" must be a positive integer or Infinity: current value is /);
      assert.equal(await res.text(), "50", "the cap in force is unchanged");
    });
  }

  test("guard: with no cap anywhere, bodies pass untouched", async () => {
    const { guard } = setup();
    const res = await guard.wrap(async (req) => new Response(await req.text()))(post("x".repeat(100_000)));
    assert.equal((await res.text()).length, 100_000);
  });
});

describe("guard: shedding gates", () => {
  test("guard: after the shutdown signal, new requests get 503 with Connection: close and Retry-After", async () => {
    const stop = new AbortController();
    const { guard, denials } = setup({ shutdown: stop });
    const fetch = guard.wrap(() => new Response("ok"));
    assert.equal((await fetch(GET())).status, 200);
    stop.abort();
    const res = await fetch(GET());
    assert.equal(res.status, 503);
    assert.equal(res.headers.get("connection"), "close");
    assert.ok(res.headers.get("retry-after"));
    assert.deepEqual(denials.map((d) => d.layer), ["draining"]);
  });

  test("guard: above the memory ceiling new requests get 503 + Retry-After; admission resumes when RSS falls", async () => {
    const clock = createManualClock();
    let rss = 100;
    const host = { clock, rss: () => rss, onShutdownSignal: () => () => {} };
    const guard = createGuard({ memory: { ceilingBytes: 1000, intervalMs: 1000 }, loadMonitor: false }, host);
    const fetch = guard.wrap(() => new Response("ok"));
    assert.equal((await fetch(GET())).status, 200);
    rss = 2000;
    clock.advance(1000);
    const res = await fetch(GET());
    assert.equal(res.status, 503);
    assert.ok(res.headers.get("retry-after"));
    rss = 500;
    clock.advance(1000);
    assert.equal((await fetch(GET())).status, 200);
    guard.dispose();
  });

  test("guard: the memory ceiling uses the Host's live reading and collector: it clears once live memory falls though RSS stays high", async () => {
    const clock = createManualClock();
    let rss = 100;
    let live = 40;
    let garbage = 0;
    const host = {
      clock,
      rss: () => rss,
      liveBytes: () => live + garbage,
      collectGarbage: () => void (garbage = 0),
      onShutdownSignal: () => () => {},
    };
    const guard = createGuard({ memory: { ceilingBytes: 1000, intervalMs: 1000 }, loadMonitor: false }, host);
    const fetch = guard.wrap(() => new Response("ok"));
    rss = 2000;
    live = 1500;
    clock.advance(1000);
    assert.equal((await fetch(GET())).status, 503);
    live = 40; // the work is over: what it held is garbage now
    garbage = 1460;
    clock.advance(1000);
    assert.equal(guard.memory!.lastRss, 2000);
    assert.equal((await fetch(GET())).status, 200, "collected, and live memory is back under the ceiling");
    guard.dispose();
  });

  test("guard: with no RSS reader the memory ceiling is off", async () => {
    const guard = createGuard({ memory: { ceilingBytes: 1 }, clock: createManualClock() });
    assert.equal(guard.memory?.shedding, false);
    assert.equal((await guard.wrap(() => new Response("ok"))(GET())).status, 200);
  });

  test("guard: while the load monitor is busy new requests get 503 (held first: the clock has no setImmediate); admitted ones are untouched", async () => {
    const { guard, clock } = setup({ loadMonitor: { minAdmitShare: 0.01 }, shedWaitMs: 200 });
    const gate = deferred();
    const fetch = guard.wrap(async () => (await gate.promise, new Response("ok")));
    const admitted = fetch(GET());
    await flushMicrotasks();
    guard.load!.record(500);
    assert.equal(guard.load!.busy, true);
    const refused = fetch(GET());
    assert.equal(guard.waitingForTurn, 1);
    clock.advance(200);
    const res = await refused;
    assert.equal(res.status, 503);
    assert.ok(res.headers.get("retry-after"));
    gate.resolve();
    assert.equal((await admitted).status, 200);
    guard.dispose();
  });

  test("guard: while the concurrency limit has waiters, a request the busy load monitor would refuse joins them instead; once none waits, the load gate holds it again", async () => {
    const { guard, clock, denials } = setup({ loadMonitor: { minAdmitShare: 0.01 }, concurrencyLimit: 1, shedWaitMs: 200 });
    const gates = [deferred(), deferred(), deferred(), deferred()];
    let started = 0;
    const fetch = guard.wrap(async () => (await gates[started++]!.promise, new Response("ok")));
    const first = fetch(GET()); // starts the probe; holds the one permit
    await flushMicrotasks();
    const second = fetch(GET()); // waits for the permit: the limit has a waiter
    assert.equal(guard.concurrency.waiting, 1);
    guard.load!.record(500);
    assert.equal(guard.load!.busy, true);
    const third = fetch(GET());
    assert.equal(guard.waitingForTurn, 0, "not held by the load gate");
    assert.equal(guard.concurrency.waiting, 2, "it waits for a permit with the others");
    gates[0]!.resolve();
    gates[1]!.resolve();
    gates[2]!.resolve();
    assert.deepEqual(await Promise.all([first, second, third].map(async (r) => (await r).status)), [200, 200, 200]);
    assert.equal(started, 3);
    assert.equal(guard.concurrency.waiting, 0);
    assert.equal(guard.load!.busy, true, "still busy");
    const fourth = fetch(GET()); // nobody waits for a permit now: the load gate decides
    assert.equal(guard.waitingForTurn, 1, "held by the load gate");
    assert.equal(started, 3);
    gates[3]!.resolve();
    // The manual clock's probe reads no delay from here: the loop reads normal again within the
    // hold (the whole share back after ~100 ms), and a held `busy` request is started then.
    clock.advance(200);
    assert.equal((await fourth).status, 200);
    assert.equal(started, 4);
    assert.deepEqual(denials, []);
    guard.dispose();
  });

  test("guard: the load monitor starts with the first request, so start-up work is not read as a stall", async () => {
    const clock = createManualClock();
    const guard = createGuard({ clock, loadMonitor: true });
    assert.equal(clock.pendingTimers, 0, "no probe before serving");
    clock.advance(5_000); // a long, synchronous start-up
    const fetch = guard.wrap(() => new Response("ok"));
    assert.equal((await fetch(GET())).status, 200);
    assert.equal(guard.load!.running, true);
    assert.equal((await fetch(GET())).status, 200);
    clock.advance(10);
    assert.equal(guard.load!.busy, false, "the first probe measures from the first request");
    guard.dispose();
    assert.equal(clock.pendingTimers, 0);
  });

  test("guard: an idle server's load probe stops waking the process, and the next request restarts it", async () => {
    const clock = createManualClock();
    const guard = createGuard({ clock, loadMonitor: { idleAfterMs: 1_000 } });
    const fetch = guard.wrap(() => new Response("ok"));
    assert.equal((await fetch(GET())).status, 200);
    assert.equal(guard.load!.running, true);
    clock.advance(1_500);
    assert.equal(guard.load!.running, false, "no requests for the idle period: the probe stopped");
    assert.equal(clock.pendingTimers, 0, "nothing left to wake the process");
    assert.equal((await fetch(GET())).status, 200, "a stopped monitor fails open");
    assert.equal(guard.load!.running, true, "the request restarted the probe");
    clock.advance(1_500);
    assert.equal(guard.load!.running, false, "and it stops again when the server goes quiet");
    assert.equal(clock.pendingTimers, 0);
    guard.dispose();
  });

  test("guard: without a Host the load monitor is off and leaves no timer behind", () => {
    const clock = createManualClock();
    const guard = createGuard({ clock });
    assert.equal(guard.load, undefined);
    assert.equal(clock.pendingTimers, 0);
  });
});

describe("guard: events", () => {
  test("guard: every admitted request reports its status and duration on the clock", async () => {
    const { guard, clock, events } = setup();
    const gate = deferred();
    const pending = guard.wrap(async () => (await gate.promise, new Response("ok", { status: 201 })))(GET());
    await flushMicrotasks();
    clock.advance(7);
    gate.resolve();
    await pending;
    assert.deepEqual(events.filter((e) => e.type === "request"), [{ type: "request", status: 201, durationMs: 7, outcome: "ok" }]);
  });

  test("guard: a throwing sink or deny hook never turns an answer into a crash", async () => {
    const guard = createGuard({
      concurrencyLimit: 1,
      shedWaitMs: 0,
      clock: createManualClock(),
      onDeny: () => { throw new Error("broken hook"); },
      onEvent: () => { throw new Error("broken sink"); },
    });
    const gate = deferred();
    const fetch = guard.wrap(async () => (await gate.promise, new Response("ok")));
    const first = fetch(GET());
    await flushMicrotasks();
    assert.equal((await fetch(GET())).status, 503);
    gate.resolve();
    assert.equal((await first).status, 200);
  });

  test("guard: two rate rules under one name are refused naming the rule, in the guard's terms", () => {
    const limiter = () => createFixedWindowLimiter({ limit: 10 });
    assert.throws(() => createGuard({ rateLimits: [{ limiter: limiter(), key: () => "all" }, { limiter: limiter() }] }), {
      name: "TypeError",
      message: /^Cannot create guard as "rateLimits\[1\]\.scope" must be distinct .*: current value is "client"/,
    });
    createGuard({ rateLimits: [{ limiter: limiter(), key: () => "all", scope: "global" }, { limiter: limiter() }] }).dispose();
  });

  test("guard: a rate rule's key or skip that is not a function is refused when the guard is built, naming the rule (it failed every request closed)", () => {
    const limiter = () => createFixedWindowLimiter({ limit: 10 });
    assert.throws(() => createGuard({ rateLimits: [{ limiter: limiter(), key: 5 as never }] }), /^TypeError: Cannot create guard as "rateLimits\[0\]\.key" must be a function: current value is 5$/);
    assert.throws(() => createGuard({ rateLimits: [{ limiter: limiter(), scope: "a" }, { limiter: limiter(), skip: "/healthz" as never }] }), /^TypeError: Cannot create guard as "rateLimits\[1\]\.skip" must be a function: current value is "\/healthz"$/);
  });

  test("guard: bad options throw a RangeError naming the field", () => {
    assert.throws(() => createGuard({ concurrencyLimit: 0 }), /"concurrencyLimit" must be a positive integer or Infinity: current value is 0/);
    assert.throws(() => createGuard({ shedWaitMs: -5 }), /"shedWaitMs" must be a non-negative integer: current value is -5/);
  });
});

describe("guard: abandoned requests", () => {
  test("guard: abandon cleanups run once on the deadline, never for a request that finished", async () => {
    const { guard, clock } = setup({ requestTimeoutMs: 100, drainTimeoutMs: 200 });
    const ran: string[] = [];
    const quick = guard.wrap((_r, { context }) => {
      context.onAbandon(() => void ran.push("quick"));
      return new Response("ok");
    });
    assert.equal((await quick(GET())).status, 200);
    const gate = deferred();
    const slow = guard.wrap(async (_r, { context }) => {
      context.onAbandon((reason) => void ran.push(`slow:${(reason as DOMException).name}`));
      await gate.promise;
      return new Response("late");
    });
    const pending = slow(GET());
    await flushMicrotasks();
    clock.advance(120);
    assert.equal((await pending).status, 408);
    gate.resolve();
    await flushMicrotasks();
    clock.advance(1000);
    assert.deepEqual(ran, ["slow:TimeoutError"]);
  });

  test("guard: a cleanup registered after the request was abandoned runs at once (client gone, 408), after it settled never", async () => {
    const { guard, clock } = setup({ requestTimeoutMs: 100 });
    const ran: string[] = [];
    // The client left before the handler registered its cleanup.
    const client = new AbortController();
    client.abort(new Error("client left"));
    const gone = guard.wrap(async (_r, { context }) => {
      context.onAbandon((reason) => void ran.push(`gone:${(reason as DOMException).name}`));
      return new Response("late");
    });
    await gone(new Request("http://localhost/", { signal: client.signal }));
    assert.deepEqual(ran, ["gone:AbortError"]);
    // The deadline answered 408 while the handler ran; its first cleanup comes after.
    const gate = deferred();
    const registered = deferred();
    const straggler = guard.wrap(async (_r, { context }) => {
      await gate.promise;
      context.onAbandon((reason) => void ran.push(`straggler:${(reason as DOMException).name}`));
      registered.resolve();
      return new Response("late");
    });
    const pending = straggler(GET());
    await flushMicrotasks();
    clock.advance(120);
    assert.equal((await pending).status, 408);
    gate.resolve();
    await registered.promise;
    assert.deepEqual(ran, ["gone:AbortError", "straggler:TimeoutError"]);
    // A request that was never abandoned: a first cleanup after its handler settled is dropped.
    let done: RequestContext | undefined;
    const quick = guard.wrap((_r, { context }) => ((done = context), new Response("ok")));
    assert.equal((await quick(GET())).status, 200);
    done!.onAbandon(() => void ran.push("after settle"));
    guard.work.abortAll(new DOMException("drain over", "AbortError"));
    clock.advance(1000);
    await flushMicrotasks();
    assert.deepEqual(ran, ["gone:AbortError", "straggler:TimeoutError"]);
  });

  test("guard: a forced drain after a 408 reports no refusal for a request already answered", async () => {
    const { guard, clock, denials, events } = setup({ requestTimeoutMs: 100 });
    const gate = deferred();
    const fetch = guard.wrap(async () => (await gate.promise, new Response("late")));
    const pending = fetch(GET());
    await flushMicrotasks();
    clock.advance(120);
    assert.equal((await pending).status, 408);
    guard.work.abortAll(new DOMException("drain over", "AbortError"));
    gate.resolve();
    await flushMicrotasks();
    assert.deepEqual(denials.map((d) => [d.layer, d.status]), [["timeout", 408]]);
    assert.deepEqual(events.filter((e) => e.type === "request").map((e) => e.type === "request" && [e.status, e.outcome]), [[408, "timeout"]]);
  });

  test("guard: a forced drain (work.abortAll) fires every in-flight signal and cleanup; the drain then sees idle", async () => {
    const { guard } = setup({ requestTimeoutMs: Infinity, concurrencyLimit: 64 });
    const ran: unknown[] = [];
    const fetch = guard.wrap((_r, { context }) => {
      context.onAbandon((reason) => void ran.push(reason));
      return new Promise<Response>((_, reject) => context.signal.addEventListener("abort", () => reject(context.signal.reason)));
    });
    const a = fetch(GET());
    const b = fetch(GET());
    await flushMicrotasks();
    assert.equal(guard.work.inFlight, 2);
    let idle = false;
    void guard.work.idle().then(() => (idle = true));
    const reason = new DOMException("drain over", "AbortError");
    guard.work.abortAll(reason);
    await Promise.all([a, b]);
    await flushMicrotasks();
    assert.deepEqual(ran, [reason, reason]);
    assert.equal(guard.work.inFlight, 0);
    assert.equal(idle, true);
  });
});

describe("guard: shutdown and forced drain", () => {
  /** A stop signal that counts the listeners added to it. */
  function countedStop() {
    const controller = new AbortController();
    let added = 0;
    const add = controller.signal.addEventListener.bind(controller.signal);
    controller.signal.addEventListener = ((...args: Parameters<AbortSignal["addEventListener"]>) => {
      added++;
      add(...args);
    }) as AbortSignal["addEventListener"];
    return { controller, added: () => added };
  }

  /** A body that enqueues one chunk and then stays open until cancelled. */
  function openBody(onCancel: (reason: unknown) => void) {
    return new ReadableStream<Uint8Array>({
      start: (c) => c.enqueue(new TextEncoder().encode("data: open\n\n")),
      cancel: onCancel,
    });
  }

  test("guard: a forced drain answers a handler that ignores its signal 503 + Connection: close at once; its late answer is discarded", async () => {
    const { guard, denials } = setup({ requestTimeoutMs: Infinity });
    const late = deferred<Response>();
    let cancelled = false;
    const fetch = guard.wrap(() => late.promise);
    const pending = fetch(GET());
    await flushMicrotasks();
    guard.work.abortAll(new DOMException("drain over", "AbortError"));
    const res = await pending;
    assert.equal(res.status, 503);
    assert.equal(res.headers.get("connection"), "close");
    assert.deepEqual(denials.map((d) => [d.layer, d.reason]), [["draining", "forced"]]);
    assert.equal(guard.work.inFlight, 1, "the straggler still holds its permit");
    late.resolve(new Response(openBody(() => (cancelled = true))));
    await flushMicrotasks();
    assert.equal(guard.work.inFlight, 0);
    assert.equal(cancelled, true, "nobody reads the late body: it is cancelled");
  });

  test("guard: a forced drain answers requests waiting in the admission queue and for their key's slot 503 + Connection: close at once; a permit or slot coming back later starts none of their handlers", async () => {
    const { guard, denials } = setup({
      requestTimeoutMs: Infinity,
      concurrencyLimit: 1,
      shedWaitMs: 60_000,
      loadMonitor: false,
      inFlightPerKey: { perKey: 1, shedWaitMs: 60_000 },
      clientKey: (r) => r.headers.get("x-key") ?? "none",
    });
    const late = deferred<Response>();
    const ran: string[] = [];
    const fetch = guard.wrap((request) => {
      const id = new URL(request.url).pathname;
      ran.push(id);
      return id === "/hold" ? late.promise : new Response("ok");
    });
    const keyed = (path: string, key: string) => new Request(`http://localhost${path}`, { headers: { "x-key": key } });
    const held = fetch(keyed("/hold", "a"));
    await flushMicrotasks();
    // One waits for the permit (another key), one for key a's slot, which the holder has.
    const queued = fetch(keyed("/queued", "b"));
    const sameKey = fetch(keyed("/same-key", "a"));
    await flushMicrotasks();
    assert.equal(guard.concurrency.waiting, 1);
    assert.equal(guard.inFlightPerKey!.waiting, 1);
    guard.work.abortAll(new DOMException("drain over", "AbortError"));
    for (const res of [await held, await queued, await sameKey]) {
      assert.equal(res.status, 503);
      assert.equal(res.headers.get("connection"), "close");
    }
    assert.deepEqual(denials.map((d) => [d.layer, d.reason]), [["draining", "forced"], ["draining", "forced"], ["draining", "forced"]]);
    assert.equal(guard.concurrency.waiting, 0, "nobody is left in the admission queue");
    assert.equal(guard.inFlightPerKey!.waiting, 0, "nobody is left waiting for a key's slot");
    // The straggler settles: its permit and its key's slot come back, and go to no one.
    late.resolve(new Response("late"));
    await flushMicrotasks();
    assert.deepEqual(ran, ["/hold"], "no waiter's handler ran");
    assert.equal(guard.inFlight, 0);
    assert.equal(guard.inFlightPerKey!.inFlight("a"), 0);
  });

  test("guard: a request waiting for a shared store's answer when a forced drain comes is refused when the answer comes, allowed or not: no handler starts after the drain", async () => {
    const clock = createManualClock();
    const backend = createFakeBackend();
    const store = createRateStore(backend, { clock, timeoutMs: 60_000 });
    const { guard, denials } = setup({ clock, requestTimeoutMs: Infinity, loadMonitor: false, rateLimits: [{ limiter: createFixedWindowLimiter({ name: "shared", limit: 100, windowMs: 1000, clock, store }) }] });
    let ran = 0;
    const fetch = guard.wrap(() => (ran++, new Response("ok")));
    const pending = fetch(GET());
    await flushMicrotasks();
    assert.equal(backend.open.length, 1, "waiting for the store");
    guard.work.abortAll(new DOMException("drain over", "AbortError"));
    backend.open[0]!.resolve([ALLOW(99)]);
    const res = await pending;
    assert.deepEqual([res.status, res.headers.get("connection"), ran], [503, "close", 0]);
    assert.deepEqual(denials.map((d) => [d.layer, d.reason]), [["draining", "forced"]]);
    assert.equal(guard.inFlight, 0);
  });

  test("guard: a guard used again after a forced drain serves what comes later as before: only the requests that were waiting then are refused", async () => {
    const { guard, denials } = setup({ requestTimeoutMs: Infinity, concurrencyLimit: 1, shedWaitMs: 60_000, loadMonitor: false });
    let release!: () => void;
    const fetch = guard.wrap(async (request) => {
      if (new URL(request.url).pathname === "/hold") await new Promise<void>((r) => (release = r));
      return new Response("ok");
    });
    const held = fetch(GET("/hold"));
    await flushMicrotasks();
    const waiting = fetch(GET("/waiting"));
    await flushMicrotasks();
    guard.work.abortAll(new DOMException("drain over", "AbortError"));
    assert.equal((await waiting).status, 503);
    release();
    await held;
    await flushMicrotasks();
    denials.length = 0; // at the same instant of the clock: counted drains, not times
    // Later: one holds the permit, the next waits for it and is served.
    const again = fetch(GET("/hold"));
    await flushMicrotasks();
    const queued = fetch(GET("/queued"));
    await flushMicrotasks();
    assert.equal(guard.concurrency.waiting, 1);
    release();
    assert.deepEqual([(await again).status, (await queued).status], [200, 200]);
    assert.deepEqual(denials, []);
  });

  test("guard: context.shutdownSignal fires at the stop for running handlers and for bodies still streaming after their handler returned, through one listener on the shared signal", async () => {
    const stop = countedStop();
    const { guard } = setup({ requestTimeoutMs: Infinity, stopping: stop.controller, concurrencyLimit: 64 });
    const gate = deferred();
    const signals: AbortSignal[] = [];
    const fetch = guard.wrap(async (request, { context }) => {
      signals.push(context.shutdownSignal);
      if (new URL(request.url).pathname === "/running") await gate.promise;
      return new Response(openBody(() => {}));
    });
    const streaming = await Promise.all(Array.from({ length: 20 }, () => fetch(GET("/stream"))));
    const running = Array.from({ length: 5 }, () => fetch(GET("/running")));
    await flushMicrotasks();
    assert.equal(signals.length, 25);
    assert.equal(guard.work.inFlight, 5, "the streams' handlers have returned");
    const reason = new DOMException("Shutting down: SIGTERM", "AbortError");
    stop.controller.abort(reason);
    assert.ok(signals.every((s) => s.aborted && s.reason === reason));
    assert.equal(stop.added(), 1, "one listener on the shared signal, none per request");
    // A request arriving after the stop sees its signal already fired.
    gate.resolve();
    await Promise.all(running);
    const after = await fetch(GET("/stream"));
    assert.equal(signals.at(-1)!.aborted, true);
    for (const res of [...streaming, after]) await res.body!.cancel();
  });

  test("guard: a request's shutdown signal is let go when its streamed body ends; a later stop does not reach it", async () => {
    const stop = new AbortController();
    const { guard } = setup({ stopping: stop });
    let signal: AbortSignal | undefined;
    const fetch = guard.wrap((_r, { context }) => ((signal = context.shutdownSignal), new Response("short")));
    const res = await fetch(GET());
    assert.equal(await res.text(), "short");
    stop.abort();
    assert.equal(signal!.aborted, false);
  });

  test("guard: a forced drain ends a long-lived body still streaming (a moment later, after the server's own closeAll): the runtime's read fails and the handler's stream is cancelled", async () => {
    const { guard, clock } = setup();
    const cancelled: unknown[] = [];
    // The route turned its deadline off (noTimeout): its body may stream for as long as it likes.
    const fetch = guard.wrap((_r, { context }) => ((context.timeoutMs = Infinity), new Response(openBody((reason) => void cancelled.push(reason)))));
    const res = await fetch(GET());
    const reader = res.body!.getReader();
    assert.match(new TextDecoder().decode((await reader.read()).value), /data: open/);
    const reason = new DOMException("drain over", "AbortError");
    guard.work.abortAll(reason);
    const read = reader.read();
    await flushMicrotasks();
    assert.deepEqual(cancelled, [], "the server's closeAll gets the first chance");
    clock.advance(50);
    await assert.rejects(read, (error: unknown) => error === reason);
    await flushMicrotasks();
    assert.deepEqual(cancelled, [reason]);
  });
});

describe("guard: keyed gates", () => {
  const from = (address: string, headers: Record<string, string> = {}) =>
    [new Request("http://localhost/", { headers }), { peer: { address, port: 5555 } }] as const;

  test("guard: a per-IP fixed window answers 429 + Retry-After once the window's budget is spent", async () => {
    const clock = createManualClock();
    const denials: DenyEvent[] = [];
    const guard = createGuard({
      clock,
      rateLimits: [{ limiter: createFixedWindowLimiter({ limit: 2, windowMs: 60_000, clock, name: "ip" }) }],
      onDeny: (e) => denials.push(e),
    });
    const fetch = guard.wrap((_r, { context }) => new Response(context.key));
    assert.equal(await (await fetch(...from("10.0.0.1"))).text(), "10.0.0.1");
    assert.equal((await fetch(...from("10.0.0.1"))).status, 200);
    const denied = await fetch(...from("10.0.0.1"));
    assert.equal(denied.status, 429);
    assert.equal(denied.headers.get("retry-after"), "60");
    assert.equal(await denied.text(), "Too Many Requests");
    assert.equal((await fetch(...from("10.0.0.2"))).status, 200, "another client has its own bucket");
    assert.deepEqual(denials.map((d) => [d.layer, d.status, d.scope, d.limiterClass]), [["rate", 429, "ip", "ip"]]);
    clock.advance(60_000);
    assert.equal((await fetch(...from("10.0.0.1"))).status, 200, "the next window admits again");
  });

  test("guard: X-Forwarded-For from an untrusted peer is ignored; the spoofer shares its socket's bucket", async () => {
    const clock = createManualClock();
    const guard = createGuard({ clock, rateLimits: [{ limiter: createFixedWindowLimiter({ limit: 1, clock }) }] });
    const fetch = guard.wrap(() => new Response("ok"));
    assert.equal((await fetch(...from("203.0.113.9", { "x-forwarded-for": "1.1.1.1" }))).status, 200);
    assert.equal((await fetch(...from("203.0.113.9", { "x-forwarded-for": "2.2.2.2" }))).status, 429);
  });

  test("guard: a trusted proxy's X-Forwarded-For is honoured from the right", async () => {
    const clock = createManualClock();
    const guard = createGuard({
      clock,
      clientKey: { trustedProxies: ["10.0.0.0/8"] },
      rateLimits: [{ limiter: createFixedWindowLimiter({ limit: 1, clock }) }],
    });
    const fetch = guard.wrap((_r, { context }) => new Response(context.key));
    const res = await fetch(...from("10.1.2.3", { "x-forwarded-for": "9.9.9.9, 198.51.100.7, 10.0.0.5" }));
    assert.equal(await res.text(), "198.51.100.7");
    assert.equal((await fetch(...from("10.9.9.9", { "x-forwarded-for": "198.51.100.7" }))).status, 429);
  });

  test("guard: scoped budgets are all-or-nothing: a client over its own budget does not drain the global one", async () => {
    const clock = createManualClock();
    const global = createFixedWindowLimiter({ limit: 3, clock });
    const guard = createGuard({
      clock,
      rateLimits: [
        { limiter: global, scope: "global", key: () => "all" },
        { limiter: createFixedWindowLimiter({ limit: 1, clock }), scope: "client" },
      ],
    });
    const fetch = guard.wrap(() => new Response("ok"));
    assert.equal((await fetch(...from("10.0.0.1"))).status, 200);
    for (let i = 0; i < 5; i++) assert.equal((await fetch(...from("10.0.0.1"))).status, 429);
    assert.equal((await fetch(...from("10.0.0.2"))).status, 200);
    assert.equal((await fetch(...from("10.0.0.3"))).status, 200);
    assert.equal((await fetch(...from("10.0.0.4"))).status, 429, "the global budget of 3 is spent only by admitted requests");
  });

  test("guard: a per-key in-flight cap refuses the peer at its cap at once and frees the slot when work settles", async () => {
    const denials: DenyEvent[] = [];
    const guard = createGuard({ clock: createManualClock(), inFlightPerKey: { perKey: 1 }, onDeny: (e) => denials.push(e) });
    const gate = deferred();
    const fetch = guard.wrap(async () => (await gate.promise, new Response("ok")));
    const first = fetch(...from("10.0.0.1"));
    await flushMicrotasks();
    const busy = await fetch(...from("10.0.0.1"));
    assert.equal(busy.status, 429);
    assert.ok(busy.headers.get("retry-after"));
    const other = fetch(...from("10.0.0.2"));
    gate.resolve();
    assert.equal((await first).status, 200);
    assert.equal((await other).status, 200);
    assert.equal(guard.inFlightPerKey!.inFlight("10.0.0.1"), 0);
    assert.deepEqual(denials.map((d) => [d.layer, d.reason]), [["peer", "peer-busy"]]);
  });

  test("guard: with inFlightPerKey.shedWaitMs a request over its key's cap waits for the key's slot and is admitted when it frees", async () => {
    const clock = createManualClock();
    const denials: DenyEvent[] = [];
    const guard = createGuard({ clock, inFlightPerKey: { perKey: 1, shedWaitMs: 100 }, onDeny: (e) => denials.push(e) });
    const gate = deferred();
    const order: string[] = [];
    const fetch = guard.wrap(async (req) => {
      const name = new URL(req.url).pathname;
      order.push(`start ${name}`);
      if (name === "/first") await gate.promise;
      return new Response(name);
    });
    const first = fetch(new Request("http://localhost/first"), { peer: { address: "10.0.0.1" } });
    await flushMicrotasks();
    const second = fetch(new Request("http://localhost/second"), { peer: { address: "10.0.0.1" } });
    await flushMicrotasks();
    assert.deepEqual(order, ["start /first"], "the second waits: its key is at its cap");
    assert.equal(guard.inFlightPerKey!.waiting, 1);
    clock.advance(99);
    gate.resolve();
    assert.equal((await first).status, 200);
    assert.equal((await second).status, 200, "admitted when the key's slot freed, within the wait");
    assert.deepEqual(order, ["start /first", "start /second"]);
    assert.equal(guard.inFlightPerKey!.inFlight("10.0.0.1"), 0);
    assert.deepEqual(denials, []);
  });

  test("guard: with inFlightPerKey.shedWaitMs a request still waiting when the wait ends is refused 429; one whose client left is dropped at once and reported (peer/aborted)", async () => {
    const clock = createManualClock();
    const denials: DenyEvent[] = [];
    const guard = createGuard({ clock, inFlightPerKey: { perKey: 1, shedWaitMs: 100 }, onDeny: (e) => denials.push(e) });
    const gate = deferred();
    let runs = 0;
    const fetch = guard.wrap(async () => (runs++, await gate.promise, new Response("ok")));
    const first = fetch(...from("10.0.0.1"));
    await flushMicrotasks();
    const ac = new AbortController();
    const leaving = fetch(new Request("http://localhost/", { signal: ac.signal }), { peer: { address: "10.0.0.1" } });
    await flushMicrotasks();
    assert.equal(guard.inFlightPerKey!.waiting, 1);
    ac.abort();
    assert.equal(guard.inFlightPerKey!.waiting, 0, "the client that left no longer waits");
    await leaving;
    const late = fetch(...from("10.0.0.1"));
    let answered = false;
    void late.then(() => (answered = true));
    await flushMicrotasks();
    assert.equal(guard.inFlightPerKey!.waiting, 1);
    clock.advance(99);
    await flushMicrotasks();
    assert.equal(guard.inFlightPerKey!.waiting, 1);
    assert.equal(answered, false);
    clock.advance(1);
    await flushMicrotasks();
    assert.equal(answered, true, "the wait runs on the guard's clock");
    const refused = await late;
    assert.equal(refused.status, 429);
    assert.ok(refused.headers.get("retry-after"));
    assert.equal(runs, 1);
    gate.resolve();
    assert.equal((await first).status, 200);
    assert.equal(guard.inFlightPerKey!.inFlight("10.0.0.1"), 0);
    assert.deepEqual(denials.map((d) => [d.layer, d.reason, d.status]), [["peer", "aborted", 503], ["peer", "peer-busy", 429]]);
  });

  test("guard: a flood from 4,096+ distinct /64s of one /48 does not lock out clients of other networks, and is itself limited", async () => {
    const clock = createManualClock();
    const denials: DenyEvent[] = [];
    const guard = createGuard({
      clock,
      rateLimits: [{ limiter: createFixedWindowLimiter({ limit: 10, windowMs: 60_000, clock, name: "ip" }) }],
      onDeny: (e) => denials.push(e),
    });
    const fetch = guard.wrap(() => new Response("ok"));
    let floodServed = 0;
    for (let i = 0; i < 6000; i++) {
      const res = await fetch(...from(`2001:db8:7:${i.toString(16)}::1`));
      if (res.status === 200) floodServed++;
      if (i === 5000) {
        assert.equal((await fetch(...from("192.0.2.7"))).status, 200, "an IPv4 client is served during the flood");
        assert.equal((await fetch(...from("2001:db8:8:1::1"))).status, 200, "an IPv6 client of another /48 is served");
      }
    }
    assert.equal(floodServed, 4096 + 10, "past the table, the /48's flood shares one budget of 10");
    assert.ok(denials.every((d) => d.layer === "rate" && d.reason === "table-full"));
  });

  test("guard: a slot reserved by gate 5 is returned when gate 6 refuses", async () => {
    const guard = createGuard({ clock: createManualClock(), concurrencyLimit: 1, shedWaitMs: 0, inFlightPerKey: { perKey: 4 } });
    const gate = deferred();
    const fetch = guard.wrap(async () => (await gate.promise, new Response("ok")));
    const first = fetch(...from("10.0.0.1"));
    await flushMicrotasks();
    assert.equal((await fetch(...from("10.0.0.1"))).status, 503);
    assert.equal(guard.inFlightPerKey!.inFlight("10.0.0.1"), 1, "only the admitted request holds a slot");
    gate.resolve();
    await first;
    assert.equal(guard.inFlightPerKey!.inFlight("10.0.0.1"), 0);
  });

  test("guard: a slot is returned when the request is refused for malformed framing", async () => {
    const guard = createGuard({ clock: createManualClock(), inFlightPerKey: { perKey: 1 } });
    const req = new Request("http://localhost/", { method: "POST", body: "x", headers: { "content-length": "abc" } });
    assert.equal((await guard.wrap(() => new Response("ok"))(req, { peer: { address: "10.0.0.1" } })).status, 400);
    assert.equal(guard.inFlightPerKey!.inFlight("10.0.0.1"), 0);
  });

  test("rate limits: a single rule decides and reports as a scoped one: its deny event names scope and class; a throwing bucket picker fails closed with a fault", async () => {
    const clock = createManualClock();
    const events: HygieneEvent[] = [];
    const guard = createGuard({
      clock,
      rateLimits: [{ limiter: createFixedWindowLimiter({ limit: 1, clock, name: "ip" }), scope: "tenant", key: (r) => {
        if (r.url.endsWith("/broken")) throw new Error("no tenant");
        return "t1";
      } }],
      onEvent: (e) => events.push(e),
    });
    const fetch = guard.wrap(() => new Response("ok"));
    assert.equal((await fetch(...from("10.0.0.1"))).status, 200);
    const refused = await fetch(...from("10.0.0.2"));
    assert.equal(refused.status, 429);
    assert.ok(refused.headers.get("retry-after"));
    assert.deepEqual(events.filter((e) => e.type === "deny"), [
      { type: "deny", layer: "rate", reason: "over-limit", status: 429, retryAfterMs: 60_000, scope: "tenant", limiterClass: "ip" },
    ]);
    events.length = 0;
    const broken = await fetch(new Request("http://localhost/broken"), { peer: { address: "10.0.0.3" } });
    assert.equal(broken.status, 429);
    assert.deepEqual(events.map((e) => e.type === "deny" ? [e.type, e.reason, e.scope] : [e.type]), [["fault"], ["deny", "limiter-error", "tenant"]]);
  });

  test("rate limits: a single rule charges each admitted request once and its limiter's own sink hears no denial — the core's limiters and a foreign one alike", async () => {
    const clock = createManualClock();
    const own: HygieneEvent[] = [];
    const fixed = createFixedWindowLimiter({ limit: 2, clock, onEvent: (e) => own.push(e) });
    // A foreign limiter: only the public interface (peek, then take).
    const inner = createFixedWindowLimiter({ limit: 2, clock, onEvent: (e) => own.push(e) });
    const foreign: RateLimiter = { name: "foreign", limit: 2, windowMs: 60_000, clock, failClosedRetryAfterMs: 60_000, size: inner.size, take: (k, c, n) => inner.take(k, c, n), peek: (k, c, n) => inner.peek(k, c, n) } as RateLimiter;
    const limiters: RateLimiter[] = [fixed, createTokenBucketLimiter({ ratePerSecond: 1 / 60, burst: 2, clock, onEvent: (e) => own.push(e) }), foreign];
    for (const limiter of limiters) {
      const events: HygieneEvent[] = [];
      const guard = createGuard({ clock, rateLimits: [{ limiter }], onEvent: (e) => events.push(e) });
      const fetch = guard.wrap(() => new Response("ok"));
      const statuses = [];
      for (let i = 0; i < 3; i++) statuses.push((await fetch(...from("10.0.0.9"))).status);
      assert.deepEqual(statuses, [200, 200, 429], limiter.name ?? "a limiter");
      assert.equal(limiter.peek("10.0.0.9").allowed, false, "two admissions used the budget of two");
      assert.deepEqual(events.filter((e) => e.type === "deny").map((e) => (e as DenyEvent).reason), ["over-limit"]);
      guard.dispose();
    }
    assert.deepEqual(own, [], "the guard reports a single rule's denials; the limiters' own sinks hear none");
  });

  test("guard: a user's clientKey function gets the request and only { peer } of the adapter's info; the built-in key reads the same peer", async () => {
    const seen: unknown[] = [];
    const info = { peer: { address: "10.0.0.7", port: 4000 }, declaresBody: false };
    const limiter = createFixedWindowLimiter({ limit: 1, clock: createManualClock() });
    const own = createGuard({ clock: createManualClock(), clientKey: (_r, i) => (seen.push(i), "k"), rateLimits: [{ limiter }] });
    assert.equal((await own.wrap(() => new Response("ok"))(new Request("http://localhost/"), info)).status, 200);
    assert.deepEqual(seen, [{ peer: info.peer }], "no adapter internals reach user code");
    const views: (string | undefined)[] = [];
    const builtIn = createGuard({ clock: createManualClock(), rateLimits: [{ limiter: createFixedWindowLimiter({ limit: 1, clock: createManualClock() }) }] });
    const fetch = builtIn.wrap((_r, view) => (views.push(view.context.key), new Response("ok")));
    assert.equal((await fetch(new Request("http://localhost/"), info)).status, 200);
    assert.equal((await fetch(new Request("http://localhost/"), info)).status, 429, "keyed by the peer: its budget of 1 is spent");
    assert.equal((await fetch(new Request("http://localhost/"), { peer: { address: "10.0.0.8" } })).status, 200);
    assert.deepEqual(views, ["10.0.0.7", "10.0.0.8"]);
  });

  test("guard: a key function that throws fails closed with 429 and a fault event, never a crash", async () => {
    const events: HygieneEvent[] = [];
    const guard = createGuard({
      clock: createManualClock(),
      clientKey: () => { throw new Error("broken identity"); },
      rateLimits: [{ limiter: createFixedWindowLimiter({ limit: 100 }) }],
      onEvent: (e) => events.push(e),
    });
    const res = await guard.wrap(() => new Response("ok"))(new Request("http://localhost/"));
    assert.equal(res.status, 429);
    assert.ok(res.headers.get("retry-after"));
    assert.deepEqual(events.map((e) => e.type), ["fault", "deny"]);
  });
});

describe("guard: the request path as one list", () => {
  const everyGate = (clock: ManualClock, stop: AbortController): GuardOptions => ({
    clock,
    shutdown: stop,
    memory: { ceilingBytes: 1 << 30 },
    loadMonitor: true,
    rateLimits: [{ limiter: createFixedWindowLimiter({ limit: 1000, clock }) }],
    inFlightPerKey: { perKey: 16 },
    concurrencyLimit: 64,
    bodyLimitBytes: 1 << 20,
    requestTimeoutMs: 5_000,
  });
  const host = (clock: ManualClock) => ({ clock, rss: () => 50_000_000, onShutdownSignal: () => () => {} });

  test("request path: the gates are one list in DESIGN.md's order, each refusing under its own deny layer", () => {
    const clock = createManualClock();
    const guard = createGuard(everyGate(clock, new AbortController()), host(clock));
    const gates = (guard as unknown as { [_GATES]: readonly Gate[] })[_GATES];
    // DESIGN.md "The request path": 1 draining … 9 request timeout (gate 0 acts per connection).
    assert.deepEqual(gates.map((g) => g.layer), ["draining", "memory", "load", "framing", "rate", "peer", "concurrency", "body", "timeout"]);
    assert.deepEqual(gates.filter((g) => g.processWide).map((g) => g.layer), ["draining", "memory", "load", "concurrency"]);
    guard.dispose();
  });

  test("framing: a malformed Content-Length with the concurrency limit full is refused 400, taking no permit and no slot", async () => {
    const { guard, denials } = setup({ concurrencyLimit: 1, shedWaitMs: 0, inFlightPerKey: { perKey: 4 } });
    const gate = deferred();
    const fetch = guard.wrap(async () => (await gate.promise, new Response("ok")));
    const peer = { peer: { address: "10.0.0.1" } };
    const first = fetch(GET(), peer);
    await flushMicrotasks();
    const bad = new Request("http://localhost/", { method: "POST", body: "x", headers: { "content-length": "abc" } });
    assert.equal((await fetch(bad, peer)).status, 400);
    assert.deepEqual(denials.map((d) => [d.layer, d.reason]), [["framing", "malformed-length"]]);
    assert.equal(guard.inFlight, 1, "only the first request holds a permit");
    assert.equal(guard.inFlightPerKey!.inFlight("10.0.0.1"), 1, "only the first request holds a slot");
    gate.resolve();
    await first;
    assert.equal(guard.inFlight, 0);
  });

  test("request path: a plain GET with every gate on, and one refused while draining, read neither headers, signal nor body of the request", async () => {
    const clock = createManualClock();
    const stop = new AbortController();
    const guard = createGuard(everyGate(clock, stop), host(clock));
    const fetch = guard.wrap(() => new Response("ok"));
    const touched: string[] = [];
    const spied = () => {
      const req = GET();
      for (const name of ["headers", "signal", "body"] as const) {
        const real = req[name];
        Object.defineProperty(req, name, { get: () => (touched.push(name), real) });
      }
      return req;
    };
    assert.equal((await fetch(spied(), { peer: { address: "10.0.0.1" } })).status, 200);
    assert.equal((await fetch(spied(), { peer: { address: "10.0.0.1" } })).status, 200);
    stop.abort();
    assert.equal((await fetch(spied(), { peer: { address: "10.0.0.1" } })).status, 503);
    assert.deepEqual(touched, []);
    guard.dispose();
  });

  test("request path: a POST the concurrency limit refuses is refused from its head: its body is never read when the adapter says the head declares one", async () => {
    const { guard, denials } = setup({ concurrencyLimit: 1, shedWaitMs: 0, bodyLimitBytes: 100 });
    const gate = deferred();
    const fetch = guard.wrap(async () => (await gate.promise, new Response("ok")));
    const first = fetch(GET());
    await flushMicrotasks();
    const req = post("hello", { "content-length": "5" });
    let reads = 0;
    const real = req.body;
    Object.defineProperty(req, "body", { get: () => (reads++, real) });
    assert.equal((await fetch(req, { declaresBody: true })).status, 503);
    assert.equal(reads, 0);
    assert.deepEqual(denials.map((d) => d.layer), ["concurrency"]);
    gate.resolve();
    await first;
    const admitted = await fetch(post("hello", { "content-length": "5" }), { declaresBody: true });
    assert.equal(admitted.status, 200, "admitted, the body is read and capped as before");
  });

  test("framing: a length the adapter's parser already read is used without reading a header; refused over the cap, or 400 when malformed", async () => {
    const { guard, denials } = setup({ bodyLimitBytes: 4 });
    const fetch = guard.wrap(async (request) => new Response(await request.text()));
    const spied = (body: string) => {
      const req = post(body, { "content-length": "abc" });
      Object.defineProperty(req, "headers", { get: () => assert.fail("a header was read") });
      return req;
    };
    assert.equal((await fetch(spied("hello"), { declaresBody: true, declared: { kind: "length", bytes: 5 } })).status, 413);
    assert.equal((await fetch(spied("hi"), { declaresBody: true, declared: { kind: "malformed" } })).status, 400);
    // Admitted, its headers are copied into the request carrying the capped body; the
    // malformed header it carries was still never consulted.
    const ok = await fetch(post("hi", { "content-length": "abc" }), { declaresBody: true, declared: { kind: "length", bytes: 2 } });
    assert.equal(await ok.text(), "hi");
    assert.deepEqual(denials.map((d) => [d.layer, d.reason]), [["body", "over-cap"], ["framing", "malformed-length"]]);
  });

  test("body cap: with no cap and no deadline, a small declared body reaches the handler in the request itself (no second Request)", async () => {
    const { guard } = setup({ requestTimeoutMs: Infinity });
    let seen: Request | undefined;
    const fetch = guard.wrap(async (request) => ((seen = request), new Response(await request.text())));
    const req = post("hello", { "content-length": "5" });
    const res = await fetch(req);
    assert.equal(await res.text(), "hello");
    assert.equal(seen, req);
  });

  test("body cap: a handler lowering the cap under a small body's declared length fails its read, though no cap watched the body", async () => {
    const { guard, denials } = setup({ requestTimeoutMs: Infinity });
    let read = "";
    const fetch = guard.wrap(async (request, { context }) => {
      context.bodyLimitBytes = 10;
      read = await request.text().then((text) => `read ${text.length} bytes`, (error: Error) => `failed: ${error.name}`);
      return new Response("stored");
    });
    const res = await fetch(post("x".repeat(1000), { "content-length": "1000" }));
    assert.equal(res.status, 413);
    assert.equal(read, "failed: TypeError", "the request's own body was cancelled: nothing of it reached the handler");
    assert.deepEqual(denials.map((d) => [d.layer, d.reason]), [["body", "over-cap"]]);
  });

  test("request context: the handler gets a view with exactly the public fields; writing an internal name on it changes nothing in the guard", async () => {
    const { guard, clock, denials } = setup({ concurrencyLimit: 4, shedWaitMs: 0, requestTimeoutMs: 1_000, bodyLimitBytes: 10 });
    let info: Record<string, unknown> | undefined;
    const fetch = guard.wrap((_request, i) => {
      info = i as unknown as Record<string, unknown>;
      for (const name of ["overflowed", "settled", "straggling", "abandonedBy", "resolve", "failBody", "declared", "release", "finish", "answer"]) {
        info[name] = () => {
          throw new Error("reached");
        };
      }
      info.overflowed = true;
      return new Response("ok");
    });
    const res = await fetch(post("12345"));
    assert.equal(res.status, 200, "a written `overflowed` did not turn the answer into 413");
    assert.deepEqual(denials, []);
    assert.equal(guard.inFlight, 0, "the permit was released through the guard's own path");
    const names = new Set<string>();
    for (let p = Object.getPrototypeOf(info); p !== null && p !== Object.prototype; p = Object.getPrototypeOf(p)) {
      for (const n of Object.getOwnPropertyNames(p)) if (n !== "constructor") names.add(n);
    }
    assert.deepEqual(
      [...names].sort(),
      ["bodyLimitBytes", "context", "key", "onAbandon", "peer", "shutdownSignal", "signal", "startedAt", "timeoutMs"],
    );
    clock.advance(2_000);
  });
});
