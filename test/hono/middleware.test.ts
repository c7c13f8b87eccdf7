import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { EventEmitter } from "node:events";
import { Hono } from "hono";
import { compress } from "hono/compress";
import { methodOverride } from "hono/method-override";
import { createGuard } from "../../src/core/guard.ts";
import type { Context } from "hono";
import { bodyLimit, hygiene, hygieneContext, inFlightCap, noTimeout, peerOf, rateLimit, timeout } from "../../src/hono/mod.ts";
import { createFixedWindowLimiter } from "../../src/core/limits/fixed_window.ts";
import { createManualClock } from "../../src/testing/manual_clock.ts";
import type { DenyEvent } from "../../src/core/events.ts";
import { flushMicrotasks } from "../support/flush.ts";
import { createTurnClock } from "../support/turn_clock.ts";
import { serveHere } from "../support/adapter.ts";
import { runtime } from "../support/runtime.ts";

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

/** Requests whose `signal` reads are counted (the tests that must not read it). */
function countingSignalReads() {
  let reads = 0;
  const request = (path: string) => {
    const r = new Request(`http://localhost${path}`);
    const signal = r.signal;
    Object.defineProperty(r, "signal", { get: () => (reads++, signal) });
    return r;
  };
  return { request, signalReads: () => reads };
}

const post = (body: BodyInit, headers: Record<string, string> = {}) => ({ method: "POST", body, headers, duplex: "half" }) as RequestInit;

describe(`hono middleware (${runtime})`, () => {
  test("hono: middleware factories return named functions, as Hono's own do", () => {
    assert.equal(bodyLimit(1).name, "bodyLimit");
    assert.equal(timeout(1).name, "timeout");
    assert.equal(noTimeout().name, "noTimeout");
    assert.equal(rateLimit({ limiter: createFixedWindowLimiter() }).name, "rateLimit");
    assert.equal(inFlightCap().name, "inFlightCap");
    assert.equal(hygiene({ clock: createManualClock() }).name, "hygiene");
  });

  test("hono: app-level hygiene sheds past the concurrency limit with 503", async () => {
    const gate = deferred();
    const app = new Hono();
    const mw = hygiene({ concurrencyLimit: 1, shedWaitMs: 0, clock: createManualClock() });
    app.use(mw);
    app.get("/", async (c) => (await gate.promise, c.text("ok")));
    const first = app.request("/");
    await flushMicrotasks();
    assert.equal(mw.guard.inFlight, 1);
    const shed = await app.request("/");
    assert.equal(shed.status, 503);
    assert.ok(shed.headers.get("retry-after"));
    gate.resolve();
    assert.equal((await first).status, 200);
    assert.equal(mw.guard.inFlight, 0);
  });

  test("hono: under hygiene() the route's own Response is the answer, not a copy; a 408 replaces it only when it comes first", async () => {
    const clock = createManualClock();
    const app = new Hono();
    app.use(hygiene({ requestTimeoutMs: 1000, clock, loadMonitor: false }));
    const built: Response[] = [];
    const hold = deferred();
    app.get("/", async (c) => {
      if (c.req.query("wait") !== undefined) await hold.promise;
      const res = new Response("mine", { headers: { "x-route": "1" } });
      built.push(res);
      return res;
    });
    const res = await app.request("/");
    assert.equal(res, built[0], "the route's Response object itself");
    assert.equal(await res.text(), "mine");
    const late = app.request("/?wait");
    await flushMicrotasks();
    clock.advance(1000);
    const timedOut = await late;
    assert.equal(timedOut.status, 408);
    hold.resolve();
    await flushMicrotasks();
    assert.equal(built.length, 2, "the route finished after the 408");
    assert.notEqual(timedOut, built[1]);
  });

  test("hono: app-level hygiene with exempt probe paths answers /healthz and /metrics while the memory ceiling sheds; other routes get 503", async () => {
    const clock = createManualClock();
    let rss = 100;
    const host = { clock, rss: () => rss, onShutdownSignal: () => () => {} };
    const app = new Hono();
    const mw = hygiene({ memory: { ceilingBytes: 1000, intervalMs: 1000 }, loadMonitor: false, exempt: ["/healthz", "/readyz", "/metrics"] }, host);
    app.use(mw);
    app.get("/", (c) => c.text("ok"));
    app.get("/healthz", (c) => c.text("ok\n"));
    app.get("/readyz", (c) => c.text(mw.guard.memory?.shedding ? "not ready\n" : "ok\n", mw.guard.memory?.shedding ? 503 : 200));
    app.get("/metrics", (c) => c.text(`memory_shedding ${mw.guard.memory?.shedding ? 1 : 0}\n`));
    rss = 2000;
    clock.advance(1000);
    assert.equal((await app.request("/")).status, 503);
    assert.equal((await app.request("/healthz")).status, 200);
    assert.equal((await app.request("/readyz")).status, 503);
    const metrics = await app.request("/metrics");
    assert.equal(metrics.status, 200);
    assert.equal(await metrics.text(), "memory_shedding 1\n");
    mw.guard.dispose();
  });

  test("hono: the app-level body cap answers 413 even when the route parses JSON", async () => {
    const app = new Hono();
    app.use(hygiene({ bodyLimitBytes: 10, clock: createManualClock() }));
    app.post("/json", async (c) => c.json(await c.req.json()));
    const res = await app.request("/json", post(JSON.stringify({ a: "x".repeat(100) }), { "content-type": "application/json" }));
    assert.equal(res.status, 413);
    const ok = await app.request("/json", post(JSON.stringify({ a: 1 }), { "content-type": "application/json" }));
    assert.deepEqual(await ok.json(), { a: 1 });
  });

  test("hono: app-level hygiene's refusal on a path no route matches is sent as is, and the not-found handler does not run", async () => {
    const app = new Hono();
    let notFound = 0;
    app.use(hygiene({ bodyLimitBytes: 10, rateLimits: [{ limiter: createFixedWindowLimiter({ limit: 3, windowMs: 60_000 }) }], loadMonitor: false }));
    app.get("/", (c) => c.text("hi"));
    app.notFound((c) => (notFound++, c.text("custom not found", 404)));
    assert.equal((await app.request("/missing", post("x".repeat(50), { "content-length": "50" }))).status, 413, "the body cap's refusal");
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push((await app.request("/missing")).status);
    assert.deepEqual(statuses, [404, 404, 429], "admitted ones reach the not-found handler; the third is over the limit");
    assert.equal((await app.request("/")).status, 429);
    assert.equal(notFound, 2, "only for the admitted requests");
  });

  test("hono: a routeBodyLimits cap covers every request Hono's router gives its route — percent-encoded paths, and `/x/*` for `/x` itself", async () => {
    const app = new Hono();
    app.use(hygiene({ loadMonitor: false, bodyLimitBytes: 32, routeBodyLimits: [{ path: "/login", bytes: 16 }, { path: "/api/*", bytes: 16 }, { path: "/up", bytes: 64 }] }));
    const routed: string[] = [];
    const read = (name: string) => async (c: Context) => (routed.push(name), c.text(String((await c.req.arrayBuffer()).byteLength)));
    app.post("/login", read("login"));
    app.post("/api/*", read("api"));
    app.post("/up", read("up"));
    const body = (n: number) => post("x".repeat(n), { "content-length": String(n) });
    for (const path of ["/login", "/%6cogin", "/%6Cogin", "/l%6fgin?x=1", "/api/x", "/%61pi/x", "/ap%69/x", "/api", "/api?x"]) {
      const res = await app.request(path, body(50));
      assert.equal(res.status, 413, `${path}: the route's 16-byte cap`);
    }
    assert.deepEqual(routed, [], "no handler read an over-cap body");
    // Within the cap, Hono routes the same paths to the same handlers.
    for (const path of ["/%6cogin", "/%61pi/x", "/api"]) assert.equal((await app.request(path, body(10))).status, 200, path);
    assert.deepEqual(routed, ["login", "api", "api"]);
    // A raise declared for /up covers its encoded form: not the service's 413.
    assert.equal((await app.request("/%75p", body(50))).status, 200);
    // An escaped "%" stays escaped, for Hono's router and for the cap alike: not /login's cap.
    assert.equal((await app.request("/%256cogin", body(20))).status, 404);
  });

  test("hono: hygiene()'s own answers keep their head: not the route's Cache-Control, Set-Cookie or Content-Encoding (Hono's header copy), but earlier middleware's CORS header", async () => {
    const app = new Hono();
    app.use(async (c, next) => {
      c.header("access-control-allow-origin", "*"); // a CORS middleware, before the guard
      await next();
    });
    app.use(hygiene({ bodyLimitBytes: 10, loadMonitor: false }));
    app.post("/upload", async (c) => {
      c.header("cache-control", "public, max-age=3600");
      c.header("set-cookie", "session=abc");
      c.header("content-encoding", "gzip"); // as compress() would label its answer
      await c.req.arrayBuffer(); // past the cap: the guard's 413
      return c.text("never");
    });
    const res = await app.request("/upload", post("x".repeat(50)));
    assert.equal(res.status, 413);
    assert.equal(res.headers.get("cache-control"), "no-store");
    assert.equal(res.headers.get("set-cookie"), null);
    assert.equal(res.headers.get("content-encoding"), null);
    assert.equal(res.headers.get("access-control-allow-origin"), "*");
    assert.equal(await res.text(), "Content Too Large");
  });

  test("hono: a route that throws is reported as outcome error, though Hono's onError answers the 500 (served by the guard, and under hygiene())", async () => {
    for (const mode of ["serve", "hygiene"] as const) {
      const events: { status: number; outcome: string }[] = [];
      const onEvent = (e: { type: string }) => void (e.type === "request" && events.push(e as never));
      const app = new Hono();
      if (mode === "hygiene") app.use(hygiene({ loadMonitor: false, onEvent }));
      app.get("/boom", () => {
        throw new Error("route failed");
      });
      app.onError((_error, c) => c.text("sorry", 500));
      const fetch = mode === "serve" ? createGuard({ loadMonitor: false, onEvent }).wrap((r) => app.fetch(r)) : (r: Request) => app.fetch(r);
      assert.equal((await fetch(new Request("http://localhost/boom"))).status, 500);
      assert.deepEqual(events.map((e) => [e.status, e.outcome]), [[500, "error"]], mode);
    }
  });

  test("hono: under hygiene() with Hono's default error handler, a route that reads a body past its cap or follows its signal to the deadline logs nothing (a line a request any client could cause), and the guard's answer is sent", async () => {
    const app = new Hono();
    const mw = hygiene({ bodyLimitBytes: 10, requestTimeoutMs: 200, loadMonitor: false });
    app.use(mw);
    app.post("/read", async (c) => c.text(String((await c.req.arrayBuffer()).byteLength)));
    app.get("/follow", async (c) => {
      const signal = hygieneContext(c)!.signal;
      await new Promise<void>((_, reject) => signal.addEventListener("abort", () => reject(signal.reason), { once: true }));
      return c.text("never");
    });
    const logged: unknown[] = [];
    const error = console.error;
    console.error = (...args: unknown[]) => void logged.push(args);
    const keepAlive = setTimeout(() => {}, 10_000);
    try {
      const chunked = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(new TextEncoder().encode("x".repeat(100)));
          controller.close();
        },
      });
      assert.equal((await app.request("/read", post(chunked))).status, 413);
      assert.equal((await app.request("/follow")).status, 408);
      await new Promise((r) => setTimeout(r, 10));
    } finally {
      console.error = error;
      clearTimeout(keepAlive);
      mw.guard.dispose();
    }
    assert.deepEqual(logged, []);
  });

  test("hono: compress() before hygiene(): a 408 sent while the route still runs goes out compressed and whole, and nothing is logged (compress() read the guard's answer to make its own, which was set aside: a 500 and a stack a request)", async () => {
    const clock = createManualClock();
    const app = new Hono();
    app.use(compress());
    const mw = hygiene({ clock, requestTimeoutMs: 1000, loadMonitor: false });
    app.use(mw);
    app.get("/follow", async (c) => {
      const signal = hygieneContext(c)!.signal;
      await new Promise<void>((_, reject) => signal.addEventListener("abort", () => reject(signal.reason), { once: true }));
      return c.text("never");
    });
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    app.get("/ignore", async (c) => (await held, c.text("late")));
    const logged: unknown[] = [];
    const error = console.error;
    console.error = (...args: unknown[]) => void logged.push(args);
    try {
      for (const path of ["/follow", "/ignore"]) {
        const pending = app.request(path, { headers: { "accept-encoding": "gzip" } });
        await flushMicrotasks();
        clock.advance(1020); // the deadline wheel fires within one tick
        const res = await pending;
        assert.deepEqual([res.status, res.headers.get("content-encoding"), res.headers.get("connection")], [408, "gzip", "close"], path);
        assert.equal(await new Response(res.body!.pipeThrough(new DecompressionStream("gzip"))).text(), "Request Timeout", path);
      }
      release();
      await flushMicrotasks();
    } finally {
      console.error = error;
      release();
      mw.guard.dispose();
    }
    assert.deepEqual(logged, []);
  });

  // A logs review: a client leaving mid-upload failed the route's body read with the runtime's
  // own error (node's "aborted", Deno's BadResource, Bun's), and Hono's default error handler
  // printed its stack — a log line a request that any client could cause.
  test(`hono: served by the ${runtime} adapter, a client leaving mid-upload fails the route's read with the guard's reason (its signal fired), and Hono's default error handler logs nothing`, { timeout: 15_000 }, async () => {
    let done!: (seen: string) => void;
    const finished = new Promise<string>((r) => (done = r));
    const app = new Hono();
    app.post("/read", async (c) => {
      try {
        return c.text(String((await c.req.arrayBuffer()).byteLength));
      } catch (error) {
        done(`${(error as Error).name} ${hygieneContext(c)?.signal.aborted}`);
        throw error;
      }
    });
    const logged: unknown[] = [];
    const error = console.error;
    console.error = (...args: unknown[]) => void logged.push(args);
    const handle = await serveHere(app.fetch, { bodyLimitBytes: 1_000_000 });
    try {
      const { connect } = await import("node:net");
      const sock = connect(handle.address.port, "127.0.0.1");
      sock.on("error", () => {});
      await new Promise<void>((r) => sock.once("connect", () => r()));
      sock.write("POST /read HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n" + "x".repeat(1000));
      await new Promise((r) => setTimeout(r, 100));
      sock.destroy();
      assert.equal(await finished, "AbortError true");
      await new Promise((r) => setTimeout(r, 50));
    } finally {
      console.error = error;
      await handle.shutdown();
    }
    assert.deepEqual(logged, []);
  });

  test("hono: under hygiene() a route that follows its signal past the deadline still gets the 408, not the error handler's answer (whose body is cancelled)", async () => {
    // The system clock: the deadline fires in a timer, as in production (no duration asserted).
    let cancelled = false;
    for (const onError of [(_e: Error, c: Context) => c.text("sorry", 500), () => new Response(new ReadableStream({ cancel: () => void (cancelled = true) }), { status: 500 })]) {
      const app = new Hono();
      const mw = hygiene({ requestTimeoutMs: 200, loadMonitor: false });
      app.use(mw);
      // A straggler first (it ignores its signal and settles after its 408), as the reviewer's
      // run had it: the follower's deadline then fires as the straggler settles.
      app.get("/ignore", async (c) => (await new Promise((r) => setTimeout(r, 400)), c.text("late")));
      app.get("/follow", async (c) => {
        // Work that stops at the request's signal (an upstream fetch given it, say).
        const signal = hygieneContext(c)!.signal;
        await new Promise<void>((resolve, reject) => {
          const timer = setTimeout(resolve, 5000);
          signal.addEventListener("abort", () => (clearTimeout(timer), reject(signal.reason)), { once: true });
        });
        return c.text("never");
      });
      app.onError(onError);
      const keepAlive = setTimeout(() => {}, 10_000);
      try {
        assert.equal((await app.request("/ignore")).status, 408);
        const a = await app.request("/follow");
        assert.deepEqual([a.status, await a.text()], [408, "Request Timeout"]);
        await new Promise((r) => setTimeout(r, 10));
      } finally {
        clearTimeout(keepAlive);
        mw.guard.dispose();
      }
    }
    assert.equal(cancelled, true, "the error handler's late answer was cancelled");
  });

  test("hono: an answer hygiene() put in place once the route settled is still an outer middleware's to replace (compress(), etag() do)", async () => {
    const app = new Hono();
    app.use(async (c, next) => {
      await next();
      c.res = new Response(`outer: ${await c.res.text()}`, c.res); // as compress() rewrites the answer
    });
    app.use(hygiene({ loadMonitor: false }));
    // A route with its deadline off: the guard passes its answer through a stream a forced drain can cut.
    app.get("/stream", noTimeout(), (c) => c.text("inner"));
    assert.equal(await (await app.request("/stream")).text(), "outer: inner");
  });

  test("hono: a route-level bodyLimit wins over the app-level cap, larger (declared in routeBodyLimits) or smaller", async () => {
    const app = new Hono();
    app.use(hygiene({ bodyLimitBytes: 10, routeBodyLimits: [{ path: "/upload", bytes: 1000 }], clock: createManualClock() }));
    app.post("/upload", bodyLimit(1000), async (c) => c.text(String((await c.req.arrayBuffer()).byteLength)));
    app.post("/tiny", bodyLimit(2), async (c) => c.text(await c.req.text()));
    const big = await app.request("/upload", post("x".repeat(500)));
    assert.equal(await big.text(), "500");
    assert.equal((await app.request("/upload", post("x".repeat(1001)))).status, 413);
    assert.equal((await app.request("/tiny", post("abc"))).status, 413);
    // An empty POST to the raised route (no body at all): the raise was a 500 (a review).
    const empty = await app.request("/upload", { method: "POST" });
    assert.equal(empty.status, 200);
    assert.equal(await empty.text(), "0");
  });

  test("hono: a bodyLimit refusal of a GET declaring a body over it is reported once, as a POST's is", async () => {
    const denials: DenyEvent[] = [];
    const app = new Hono();
    app.use(hygiene({ clock: createManualClock(), loadMonitor: false, onDeny: (e) => void denials.push(e) }));
    app.on(["GET", "POST"], "/small", bodyLimit(10), (c) => c.text("ok"));
    assert.equal((await app.request("/small", { method: "POST", body: "x".repeat(500), headers: { "content-length": "500" } })).status, 413);
    assert.equal((await app.request("/small", { headers: { "content-length": "500" } })).status, 413);
    assert.deepEqual(denials.map((d) => [d.layer, d.reason, d.status]), [["body", "over-cap", 413], ["body", "over-cap", 413]]);
  });

  test("hono: bodyLimit(n) takes a body of exactly n bytes, declared or streamed, and refuses n + 1", async () => {
    const app = new Hono();
    app.use(hygiene({ clock: createManualClock(), loadMonitor: false, bodyLimitBytes: 100 }));
    app.post("/u", bodyLimit(10), async (c) => c.text(String((await c.req.text()).length)));
    const declared = await app.request("/u", { method: "POST", body: "x".repeat(10), headers: { "content-length": "10" } });
    assert.deepEqual([declared.status, await declared.text()], [200, "10"]);
    const streamed = await app.request("/u", { method: "POST", body: new Blob(["x".repeat(10)]).stream(), duplex: "half" } as RequestInit);
    assert.deepEqual([streamed.status, await streamed.text()], [200, "10"]);
    assert.equal((await app.request("/u", { method: "POST", body: "x".repeat(11), headers: { "content-length": "11" } })).status, 413);
  });

  test("hono: bodyLimit(bytes) validates at creation with a RangeError naming the field", () => {
    for (const bad of [NaN, -1, 0, 1.5, "10", null, -Infinity]) {
      assert.throws(() => bodyLimit(bad as never), (error: unknown) => {
        assert.ok(error instanceof RangeError, String(error));
        assert.match(error.message, /^Cannot create bodyLimit as "bytes" must be a positive integer or Infinity: current value is /);
        return true;
      });
    }
    assert.equal(bodyLimit(Infinity).name, "bodyLimit");
  });

  test("body cap: a route bodyLimit refuses a declared length over it before the route's handler runs", async () => {
    const app = new Hono();
    const denials: string[] = [];
    app.use(hygiene({ bodyLimitBytes: 1000, clock: createManualClock(), onDeny: (e) => denials.push(`${e.layer}:${e.reason}:${e.status}`) }));
    let calls = 0;
    app.post("/tiny", bodyLimit(10), (c) => (calls++, c.text("never read the body")));
    const res = await app.request("/tiny", post("x".repeat(50), { "content-length": "50" }));
    assert.equal(res.status, 413);
    assert.equal(calls, 0);
    assert.deepEqual(denials, ["body:over-cap:413"]);
  });

  test("body cap: under app-level hygiene() a declared length over the cap is refused before any route runs", async () => {
    const app = new Hono();
    app.use(hygiene({ bodyLimitBytes: 10, clock: createManualClock() }));
    let calls = 0;
    app.post("/login", (c) => (calls++, c.text("ignored the body")));
    const res = await app.request("/login", post("x".repeat(50), { "content-length": "50" }));
    assert.equal(res.status, 413);
    assert.equal(calls, 0);
  });

  test("hono: timeout(ms) cuts the route at its own deadline with 408; noTimeout() never does", async () => {
    const clock = createManualClock();
    const app = new Hono();
    app.use(hygiene({ requestTimeoutMs: 1000, drainTimeoutMs: 2000, clock }));
    const hold = deferred();
    app.get("/short", timeout(100), async (c) => (await hold.promise, c.text("late")));
    app.get("/events", noTimeout(), async (c) => (await hold.promise, c.text("stream over")));
    const short = app.request("/short");
    const events = app.request("/events");
    await flushMicrotasks();
    clock.advance(150);
    assert.equal((await short).status, 408);
    clock.advance(60_000);
    hold.resolve();
    assert.equal(await (await events).text(), "stream over");
  });

  test("hono: rateLimit() without a limiter (or with a factory for one) throws when the app is built, naming the field", () => {
    for (const limiter of [undefined, createFixedWindowLimiter, {}]) {
      assert.throws(() => rateLimit({ limiter: limiter as never }), { name: "TypeError", message: /^Cannot create rateLimit as "limiter" must be a rate limiter/ });
    }
  });

  // A review: a misspelled option was ignored (the protection it named silently off).
  test("hono: hygiene(), rateLimit() and inFlightCap() refuse an option they do not have, naming the nearest", () => {
    assert.throws(() => hygiene({ bodyLimit: 10 } as never), { name: "TypeError", message: 'Cannot create guard as "bodyLimit" is not an option (did you mean "bodyLimitBytes"?)' });
    assert.throws(() => rateLimit({ limiter: createFixedWindowLimiter({ limit: 1 }), header: true } as never), { name: "TypeError", message: 'Cannot create rateLimit as "header" is not an option (did you mean "headers"?)' });
    assert.throws(() => inFlightCap({ perkey: 2 } as never), { name: "TypeError", message: 'Cannot create inFlightCap as "perkey" is not an option (did you mean "perKey"?)' });
    assert.throws(() => inFlightCap({ keys: () => "k" } as never), { name: "TypeError", message: 'Cannot create inFlightCap as "keys" is not an option (did you mean "key"?)' });
    assert.throws(() => inFlightCap({ kye: () => "k" } as never), { name: "TypeError", message: 'Cannot create inFlightCap as "kye" is not an option (did you mean "key"?)' });
  });

  test("hono: rateLimit on /login answers 429 + Retry-After per client key, before the handler runs", async () => {
    const clock = createManualClock();
    let checks = 0;
    const app = new Hono();
    app.post("/login", rateLimit({ limiter: createFixedWindowLimiter({ limit: 2, windowMs: 60_000, clock, name: "auth" }) }), (c) => (checks++, c.text("checked")));
    const from = (address: string) => ({ peer: { address } });
    for (let i = 0; i < 2; i++) assert.equal((await app.request("/login", { method: "POST" }, from("10.0.0.1"))).status, 200);
    const denied = await app.request("/login", { method: "POST" }, from("10.0.0.1"));
    assert.equal(denied.status, 429);
    assert.equal(denied.headers.get("retry-after"), "60");
    assert.equal((await app.request("/login", { method: "POST" }, from("10.0.0.2"))).status, 200);
    assert.equal(checks, 3);
  });

  test("hono: a route key function that throws or returns no string fails closed: 429 limiter-error and a fault, under hygiene() and without it", async () => {
    const keys = [() => {
      throw new Error("no key");
    }, async () => "k", () => ({ id: 42 })];
    for (const key of keys) {
      for (const guarded of [false, true]) {
        const events: { type: string; layer?: string; reason?: string; source?: string }[] = [];
        const app = new Hono();
        if (guarded) app.use(hygiene({ clock: createManualClock(), onEvent: (e) => events.push(e as never), loadMonitor: false }));
        app.get("/rate", rateLimit({ limiter: createFixedWindowLimiter({ limit: 100, windowMs: 60_000, name: "auth", onEvent: (e) => events.push(e as never) }), key: key as never }), (c) => c.text("ok"));
        app.get("/cap", inFlightCap({ perKey: 1, key: key as never, onEvent: (e) => events.push(e as never) }), (c) => c.text("ok"));
        for (const path of ["/rate", "/cap"]) {
          const res = await app.request(path, {}, { peer: { address: "10.0.0.1" } });
          assert.equal(res.status, 429, `${path} ${String(key)} guarded=${guarded}`);
          assert.equal(res.headers.get("retry-after"), "1");
        }
        // Behind the guard both report through it; without one, rateLimit() through its limiter's
        // onEvent and the cap through its own.
        const faults = events.filter((e) => e.type === "fault" && e.source === "client-key").length;
        const denials = events.filter((e) => e.type === "deny" && e.reason === "limiter-error").map((e) => e.layer);
        assert.deepEqual({ faults, denials }, { faults: 2, denials: ["rate", "peer"] }, `${String(key)} guarded=${guarded}`);
      }
    }
    await new Promise((r) => setTimeout(r, 0));
  });

  test("hono: rateLimit reads the peer from Bun.serve, Deno.serve and @hono/node-server env shapes", async () => {
    const clock = createManualClock();
    const app = new Hono();
    app.get("/", rateLimit({ limiter: createFixedWindowLimiter({ limit: 1, clock }) }), (c) => c.text("ok"));
    const envs = [
      { requestIP: () => ({ address: "10.1.1.1", port: 1 }) },
      { remoteAddr: { hostname: "10.2.2.2", port: 1 } },
      { incoming: { socket: { remoteAddress: "10.3.3.3", remotePort: 1 } } },
    ];
    for (const env of envs) {
      assert.equal((await app.request("/", {}, env)).status, 200);
      assert.equal((await app.request("/", {}, env)).status, 429, JSON.stringify(env));
    }
  });

  test("hono: under hygiene() on Deno.serve, a client whose connection reset before its peer was read (0.0.0.0:0) is refused at the keyed gate, its route never run; a Unix socket's peer is keyed unknownKey", async () => {
    const denials: string[] = [];
    const app = new Hono();
    app.use(hygiene({ clock: createManualClock(), loadMonitor: false, rateLimits: [{ limiter: createFixedWindowLimiter({ limit: 1, windowMs: 60_000 }) }], onDeny: (e) => void denials.push(`${e.layer}/${e.reason}`) }));
    const keys: string[] = [];
    app.get("/", (c) => (keys.push(String(hygieneContext(c)!.key)), c.text("ok")));
    assert.equal((await app.request("/", {}, { remoteAddr: { hostname: "0.0.0.0", port: 0 } })).status, 503);
    assert.deepEqual(denials, ["rate/aborted"]);
    assert.equal((await app.request("/", {}, { remoteAddr: { transport: "unix", path: "/tmp/x.sock" } })).status, 200);
    assert.deepEqual(keys, ["unknown"]);
  });

  test("hono: a request waiting for a later turn whose @hono/node-server socket closed is refused from the socket, without reading its signal", async () => {
    // The load gate's batch bound (20 ms), driven by hand: each handler "burns" 30 ms.
    const clock = createTurnClock();
    const denials: string[] = [];
    const app = new Hono();
    app.use(hygiene({ clock, concurrencyLimit: 64, loadMonitor: { maxBatchMs: 20, minAdmitShare: 1, highWatermarkMs: 600_000 }, onDeny: (e) => void denials.push(e.reason) }));
    const handled: string[] = [];
    app.get("*", (c) => {
      handled.push(c.req.path);
      clock.t += 30;
      return c.text("ok");
    });
    const { request, signalReads } = countingSignalReads();
    const socket = { destroyed: false };
    const env = { incoming: { socket } };
    const first = app.fetch(request("/1"), env); // starts the probe
    const second = app.fetch(request("/2"), env); // the batch's first admission
    const gone = app.fetch(request("/3"), { incoming: { socket: { destroyed: true } } }); // past the bound: waits
    const kept = app.fetch(request("/4"), env);
    await flushMicrotasks();
    assert.deepEqual(handled, ["/1", "/2"]);
    for (let i = 0; i < 4 && clock.runImmediates() > 0; i++) await flushMicrotasks();
    assert.deepEqual((await Promise.all([first, second, gone, kept])).map((r) => r.status), [200, 200, 503, 200]);
    assert.deepEqual(handled, ["/1", "/2", "/4"], "the request whose client left never reached its route");
    assert.deepEqual(denials, ["aborted"]);
    assert.equal(signalReads(), 0, "the socket answered; no request's signal was read");
  });

  test("hono: a request queued for a permit whose @hono/node-server response closes leaves the queue at once, without reading its signal", async () => {
    const gate = deferred();
    const denials: string[] = [];
    const app = new Hono();
    app.use(hygiene({ clock: createManualClock(), concurrencyLimit: 1, shedWaitMs: 60_000, loadMonitor: false, onDeny: (e) => void denials.push(e.reason) }));
    const handled: string[] = [];
    app.get("*", async (c) => {
      handled.push(c.req.path);
      if (c.req.path === "/hold") await gate.promise;
      return c.text("ok");
    });
    const { request, signalReads } = countingSignalReads();
    // @hono/node-server's env: the request's socket and the response, which emits "close"
    // when its connection closes before it was answered.
    const envOf = () => {
      const socket = { destroyed: false };
      return { socket, env: { incoming: { socket }, outgoing: new EventEmitter() } };
    };
    const holder = envOf(), leaver = envOf(), stayer = envOf();
    const held = app.fetch(request("/hold"), holder.env);
    await flushMicrotasks();
    const left = app.fetch(request("/left"), leaver.env);
    const kept = app.fetch(request("/kept"), stayer.env);
    await flushMicrotasks();
    assert.equal(leaver.env.outgoing.listenerCount("close"), 1, "the waiter listens on its response");
    leaver.socket.destroyed = true;
    leaver.env.outgoing.emit("close");
    assert.equal((await left).status, 503);
    assert.deepEqual(denials, ["aborted"]);
    assert.equal(leaver.env.outgoing.listenerCount("close"), 0);
    gate.resolve();
    assert.deepEqual((await Promise.all([held, kept])).map((r) => r.status), [200, 200]);
    assert.deepEqual(handled, ["/hold", "/kept"], "the request whose client left never reached its route");
    assert.equal(stayer.env.outgoing.listenerCount("close"), 0, "the admitted waiter stopped listening");
    assert.equal(signalReads(), 0, "the response answered; no request's signal was read");
  });

  test("hono: inFlightCap refuses a client at its cap with 429 and frees the slot when the handler settles", async () => {
    const gate = deferred();
    const app = new Hono();
    app.get("/export", inFlightCap({ perKey: 1 }), async (c) => (await gate.promise, c.text("done")));
    const env = { peer: { address: "10.0.0.9" } };
    const first = app.request("/export", {}, env);
    await flushMicrotasks();
    assert.equal((await app.request("/export", {}, env)).status, 429);
    gate.resolve();
    assert.equal((await first).status, 200);
    assert.equal((await app.request("/export", {}, env)).status, 200);
  });

  test("hono: a request answered 408 while it waits in inFlightCap leaves the wait: its handler never runs, and it is not reported refused again", async () => {
    const clock = createManualClock();
    const denials: string[] = [];
    const app = new Hono();
    app.use(hygiene({ requestTimeoutMs: 1000, drainTimeoutMs: 2000, clock, loadMonitor: false, onDeny: (e) => void denials.push(`${e.layer}/${e.reason}`) }));
    const hold = deferred();
    const ran: string[] = [];
    const cap = inFlightCap({ perKey: 1, shedWaitMs: 5000, clock });
    app.get("/hold", noTimeout(), cap, async (c) => (ran.push("hold"), await hold.promise, c.text("held")));
    app.get("/wait", cap, (c) => (ran.push("wait"), c.text("waited")));
    const env = { peer: { address: "10.0.0.9" } };
    const held = app.request("/hold", {}, env);
    await flushMicrotasks();
    const waiting = app.request("/wait", {}, env);
    await flushMicrotasks();
    for (let t = 0; t < 1500; t += 10) {
      clock.advance(10); // past /wait's deadline (armed at the first tick that finds it waiting), within the cap's wait
      await flushMicrotasks();
    }
    assert.equal((await waiting).status, 408);
    hold.resolve();
    assert.equal((await held).status, 200);
    clock.advance(5000); // past the cap's wait bound
    await flushMicrotasks();
    assert.deepEqual(ran, ["hold"], "the answered request's handler never ran");
    assert.deepEqual(denials, ["timeout/deadline"], "one refusal, reported once");
  });

  test("hono: without a guard, inFlightCap reports its refusals to its own onEvent, once; rateLimit to its limiter's", async () => {
    const gate = deferred();
    const events: string[] = [];
    const onEvent = (e: { type: string; layer?: string; reason?: string }) => void events.push(`${e.type}:${e.layer}:${e.reason}`);
    const app = new Hono();
    app.get("/export", inFlightCap({ perKey: 1, onEvent }), async (c) => (await gate.promise, c.text("done")));
    app.get("/login", rateLimit({ limiter: createFixedWindowLimiter({ limit: 1, clock: createManualClock(), onEvent }) }), (c) => c.text("ok"));
    const env = { peer: { address: "10.0.0.9" } };
    const first = app.request("/export", {}, env);
    await flushMicrotasks();
    assert.equal((await app.request("/export", {}, env)).status, 429);
    gate.resolve();
    await first;
    assert.equal((await app.request("/login", {}, env)).status, 200);
    assert.equal((await app.request("/login", {}, env)).status, 429);
    assert.deepEqual(events, ["deny:peer:peer-busy", "deny:rate:over-limit"]);
  });

  test("hono: behind hygiene(), a route rateLimit whose limiter has its own onEvent is reported once, through the guard", async () => {
    const guardEvents: string[] = [];
    const limiterEvents: string[] = [];
    const app = new Hono();
    app.use(hygiene({ clock: createManualClock(), onEvent: (e) => void guardEvents.push(e.type === "deny" ? `${e.layer}:${e.reason}:${e.scope}` : e.type) }));
    const limiter = createFixedWindowLimiter({ limit: 1, clock: createManualClock(), name: "auth", onEvent: (e) => void limiterEvents.push(e.type) });
    app.post("/login", rateLimit({ limiter }), (c) => c.text("ok"));
    assert.equal((await app.request("/login", { method: "POST" })).status, 200);
    assert.equal((await app.request("/login", { method: "POST" })).status, 429);
    assert.deepEqual(guardEvents.filter((e) => e !== "request"), ["rate:over-limit:route"]);
    assert.deepEqual(limiterEvents, []);
  });

  test("hono: hygieneContext(c).shutdownSignal fires when the app-level guard's shutdown signal does, for a stream the route already returned", async () => {
    const stop = new AbortController();
    const app = new Hono();
    app.use(hygiene({ shutdown: stop, clock: createManualClock() }));
    app.get("/events", noTimeout(), (c) => {
      const shutdown = hygieneContext(c)!.shutdownSignal;
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(new TextEncoder().encode("data: open\n\n"));
          shutdown.addEventListener("abort", () => controller.close(), { once: true });
        },
      });
      return new Response(body, { headers: { "content-type": "text/event-stream" } });
    });
    const res = await app.request("/events");
    const text = res.text();
    await flushMicrotasks();
    stop.abort();
    assert.equal(await text, "data: open\n\n");
  });

  // A soak review: Hono answers HEAD by running the GET route and dropping its Response for a
  // bodiless copy, so a long-lived route's tracked body was never read nor cancelled: every
  // HEAD stayed in work.streaming (and held its request) for good.
  test("hono: a HEAD request to a long-lived route (noTimeout, shutdownSignal) leaves nothing tracked under hygiene()", async () => {
    const stop = new AbortController();
    const mw = hygiene({ loadMonitor: false, clock: createManualClock(), shutdown: { signal: stop.signal } });
    const streaming = () => (mw.guard.work as { readonly streaming?: number }).streaming;
    const app = new Hono();
    app.use(mw);
    const stream = () => new ReadableStream({ pull: (c) => c.enqueue(new TextEncoder().encode("data: x\n\n")) });
    app.get("/events", noTimeout(), (c) => (void hygieneContext(c)?.shutdownSignal, new Response(stream(), { headers: { "content-type": "text/event-stream" } })));
    app.get("/watch", (c) => (void hygieneContext(c)?.shutdownSignal, new Response(stream())));
    for (const path of ["/events", "/watch"]) {
      for (let i = 0; i < 3; i++) {
        const res = await app.request(path, { method: "HEAD" });
        assert.equal(res.status, 200);
        assert.equal(res.body, null);
      }
    }
    await flushMicrotasks();
    assert.equal(streaming(), 0);
    // A GET is tracked while it streams, as before.
    const res = await app.request("/events");
    assert.equal(streaming(), 1);
    await res.body!.cancel();
    await flushMicrotasks();
    assert.equal(streaming(), 0);
    mw.guard.dispose();
  });

  // A review: two hygiene() on nested routes (or one under serve()'s guard) — the inner's 408
  // reached the client as an empty 200, and the outer gave its permit back while the route ran.
  test("hono: hygiene() on a request another guard already holds (an outer hygiene() on a sub-app, or guard.wrap/serve()) steps aside: the outer's deadline, limit and answer hold, one warning logged", async () => {
    const clock = createManualClock();
    const logs: { level: string; msg: string }[] = [];
    const log = (r: { level: string; msg: string }) => void logs.push(r);
    let gate = deferred();
    const build = () => {
      const api = new Hono();
      api.use(hygiene({ requestTimeoutMs: 500, loadMonitor: false, clock, log }));
      api.get("/slow", async (c) => (await gate.promise, c.text("late")));
      api.get("/ctx", (c) => c.text(String(hygieneContext(c)?.timeoutMs)));
      return api;
    };
    const outer = hygiene({ concurrencyLimit: 1, shedWaitMs: 0, requestTimeoutMs: 1000, loadMonitor: false, clock, log });
    const app = new Hono();
    app.use(outer);
    app.route("/api", build());
    const served = build();
    const guard = createGuard({ concurrencyLimit: 1, shedWaitMs: 0, requestTimeoutMs: 1000, loadMonitor: false, clock, log });
    const wrapped = guard.wrap((r, info) => served.fetch(r, info));
    try {
      for (const [name, fetch, inFlight] of [
        ["nested", (path: string) => app.request(path), () => outer.guard.inFlight],
        ["under a guard", (path: string) => wrapped(new Request(`http://localhost${path}`)), () => guard.inFlight],
      ] as const) {
        gate = deferred();
        // The route sees the outer guard's context.
        assert.equal(await (await fetch("/api/ctx".slice(name === "nested" ? 0 : 4))).text(), "1000", name);
        let settled = false;
        const first = Promise.resolve(fetch("/api/slow".slice(name === "nested" ? 0 : 4))).then((r) => ((settled = true), r));
        await flushMicrotasks();
        clock.advance(600); // past the inner's 500 ms: nothing, it stepped aside
        await flushMicrotasks();
        assert.equal(settled, false, name);
        assert.equal(inFlight(), 1, name);
        assert.equal((await fetch("/api/ctx".slice(name === "nested" ? 0 : 4))).status, 503, `${name}: the outer's limit holds`);
        clock.advance(400);
        const res = await first;
        assert.deepEqual([res.status, (await res.text()).length > 0], [408, true], name);
        assert.equal(inFlight(), 1, `${name}: the straggler keeps its permit`);
        gate.resolve();
        await flushMicrotasks();
        assert.equal(inFlight(), 0, name);
      }
      const warned = logs.filter((r) => r.msg.includes("steps aside"));
      assert.equal(warned.length, 2, "once a middleware instance: " + JSON.stringify(logs));
      assert.ok(warned.every((r) => r.level === "warn"));
    } finally {
      guard.dispose();
      outer.guard.dispose();
    }
  });

  // A review of the change above: Hono's Netlify and Lambda@Edge adapters call app.fetch(req,
  // { context }) with the platform's context: read as a guard's, hygiene() stepped aside (no body
  // cap, no limits) and timeout() set the platform's object.
  test("hono: an env with a context of its own (Hono's Netlify adapter's) is no guard: hygiene() guards, and the routes get its context", async () => {
    const logs: string[] = [];
    const app = new Hono();
    app.use(hygiene({ bodyLimitBytes: 10, requestTimeoutMs: 1234, loadMonitor: false, clock: createManualClock(), log: (r) => void logs.push(r.msg) }));
    app.post("/", async (c) => c.text(String((await c.req.text()).length)));
    app.get("/ctx", (c) => c.text(String(hygieneContext(c)?.timeoutMs)));
    const platform = { context: { requestId: "abc", geo: {} } };
    const big = await app.fetch(new Request("http://localhost/", { method: "POST", body: "x".repeat(100), headers: { "content-length": "100" } }), platform);
    assert.equal(big.status, 413);
    assert.equal(await (await app.fetch(new Request("http://localhost/ctx"), platform)).text(), "1234");
    assert.deepEqual(logs.filter((m) => m.includes("steps aside")), []);
  });

  // A review: with serve({ clientKey: { trustedProxies } }) and no keyed gate of its own, the
  // route helpers keyed every client by the proxy's address (one budget for everyone).
  test("hono: route rateLimit()/inFlightCap() key by the guard's clientKey even when the guard has no keyed gate; a route's own key wins", async () => {
    const clientKey = { trustedProxies: ["10.0.0.1/32"] };
    const build = () => {
      const app = new Hono();
      app.get("/login", rateLimit({ limiter: createFixedWindowLimiter({ limit: 1, windowMs: 60_000, name: "auth" }) }), (c) => c.text("ok"));
      app.get("/token", rateLimit({ limiter: createFixedWindowLimiter({ limit: 1, windowMs: 60_000 }), key: (r) => r.headers.get("x-token") ?? "none" }), (c) => c.text("ok"));
      app.get("/key", (c) => c.text(String(hygieneContext(c)?.key)));
      return app;
    };
    const served = build();
    // This guard has a keyed gate (its key computed by it), hygiene() below none (read lazily).
    const guard = createGuard({ loadMonitor: false, clientKey, inFlightPerKey: { perKey: 100 } });
    const viaGuard = guard.wrap((r, info) => served.fetch(r, info));
    const mounted = new Hono();
    mounted.use(hygiene({ loadMonitor: false, clientKey }));
    mounted.route("/", build());
    const viaMiddleware = (r: Request) => mounted.fetch(r, { incoming: { socket: { remoteAddress: "10.0.0.1", remotePort: 1 } } });
    try {
      for (const fetch of [(r: Request) => viaGuard(r, { peer: { address: "10.0.0.1" } }), viaMiddleware]) {
        const get = async (path: string, headers: Record<string, string>) => {
          const res = await fetch(new Request(`http://localhost${path}`, { headers }));
          const text = await res.text();
          return path === "/key" ? text : res.status;
        };
        assert.equal(await get("/key", { "x-forwarded-for": "203.0.113.9" }), "203.0.113.9");
        // Five clients behind the proxy: one login each.
        const logins = [];
        for (const client of ["203.0.113.1", "203.0.113.2", "203.0.113.3", "203.0.113.1"]) logins.push(await get("/login", { "x-forwarded-for": client }));
        assert.deepEqual(logins, [200, 200, 200, 429]);
        // The route's own key function: one client, two tokens, two budgets.
        const tokens = [];
        for (const token of ["a", "b", "a"]) tokens.push(await get("/token", { "x-forwarded-for": "203.0.113.1", "x-token": token }));
        assert.deepEqual(tokens, [200, 200, 429]);
      }
    } finally {
      guard.dispose();
    }
  });

  // A review of the change above: a guard key function that failed left context.key undefined,
  // so the route fell back to the peer's key and admitted; each read of the key ran it again.
  test("hono: the guard's failing clientKey fails a route's limits closed (429 limiter-error), reported as one fault a request", async () => {
    const faults: string[] = [];
    const denies: string[] = [];
    const app = new Hono();
    app.use(hygiene({
      loadMonitor: false,
      clientKey: (r) => {
        const tenant = r.headers.get("x-tenant");
        if (tenant === null) throw new Error("no tenant");
        return tenant;
      },
      onEvent: (e) => void (e.type === "fault" && faults.push(e.source)),
      onDeny: (e) => void denies.push(`${e.layer} ${e.reason} ${e.status}`),
    }));
    app.get("/r", rateLimit({ limiter: createFixedWindowLimiter({ limit: 1, windowMs: 60_000 }) }), inFlightCap({ perKey: 5 }), (c) => c.text(`${hygieneContext(c)?.key} ${hygieneContext(c)?.key}`));
    app.get("/read", (c) => c.text(`${hygieneContext(c)?.key} ${hygieneContext(c)?.key}`));
    const env = (address: string) => ({ incoming: { socket: { remoteAddress: address, remotePort: 1 } } });
    const statuses = [];
    for (const address of ["10.0.0.1", "10.0.0.2"]) {
      const res = await app.fetch(new Request("http://localhost/r"), env(address));
      statuses.push(res.status);
      await res.body?.cancel();
    }
    assert.deepEqual(statuses, [429, 429]);
    assert.deepEqual(denies, ["rate limiter-error 429", "rate limiter-error 429"]);
    // A handler reading the key twice: undefined, and the function ran (and reported) once.
    assert.equal(await (await app.fetch(new Request("http://localhost/read"), env("10.0.0.1"))).text(), "undefined undefined");
    assert.deepEqual(faults, ["client-key", "client-key", "client-key"]);
    const ok = await app.fetch(new Request("http://localhost/r", { headers: { "x-tenant": "acme" } }), env("10.0.0.3"));
    assert.equal(await ok.text(), "acme acme");
  });

  // A review: the route helpers' refusals were fresh Responses, and Hono drops what earlier
  // middleware set with c.header() (a request id) from a Response returned from the chain;
  // Hono's own bodyLimit keeps it.
  for (const made of [false, true]) test(`hono: route refusals (rateLimit, inFlightCap, bodyLimit) keep the headers earlier middleware set${made ? " on c.res (as cors() does)" : " with c.header()"}, not their caching or cookies`, async () => {
    const app = new Hono();
    app.use(hygiene({ loadMonitor: false }));
    app.use(async (c, next) => {
      if (made) {
        // Made c.res before the route: Hono's setter then copies its headers over what the route returns.
        c.res.headers.set("x-request-id", "abc");
        c.res.headers.set("cache-control", "public, max-age=60");
        c.res.headers.append("set-cookie", "session=secret; Path=/");
      } else {
        c.header("x-request-id", "abc");
        c.header("cache-control", "public, max-age=60");
        c.header("set-cookie", "session=secret; Path=/");
      }
      await next();
    });
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let entered!: () => void;
    const inHandler = new Promise<void>((r) => (entered = r));
    app.get("/rate", rateLimit({ limiter: createFixedWindowLimiter({ limit: 1, windowMs: 60_000 }) }), (c) => c.text("ok"));
    app.get("/cap", inFlightCap({ perKey: 1 }), async (c) => (entered(), await held, c.text("ok")));
    app.post("/small", bodyLimit(10), async (c) => c.text(await c.req.text()));
    const env = { incoming: { socket: { remoteAddress: "10.0.0.9", remotePort: 1 } } };
    const seen = (res: Response) => [res.status, res.headers.get("x-request-id"), res.headers.get("cache-control"), res.status === 200 ? "-" : res.headers.get("set-cookie")];
    assert.deepEqual(seen(await app.fetch(new Request("http://localhost/rate"), env)), [200, "abc", "public, max-age=60", "-"]);
    assert.deepEqual(seen(await app.fetch(new Request("http://localhost/rate"), env)), [429, "abc", "no-store", null]);
    const first = app.fetch(new Request("http://localhost/cap"), env);
    await inHandler; // the first request holds the key's one slot
    assert.deepEqual(seen(await app.fetch(new Request("http://localhost/cap"), env)), [429, "abc", "no-store", null]);
    release();
    await first;
    assert.deepEqual(seen(await app.fetch(new Request("http://localhost/small", { method: "POST", body: "x".repeat(100), headers: { "content-length": "100" } }), env)), [413, "abc", "no-store", null]);
  });

  test("hono: bodyLimit without any guard fails loudly instead of silently not capping", async () => {
    const app = new Hono();
    const errors: Error[] = [];
    app.onError((error, c) => (errors.push(error), c.text("error", 500)));
    app.post("/upload", bodyLimit(10), (c) => c.text("no cap"));
    assert.equal((await app.request("/upload", post("x"))).status, 500);
    assert.match(errors[0]!.message, /no serve-hygiene context: serve the app with serve-hygiene's serve\(\), or add hygiene\(\) before it/);
  });

  test(`hono: served by the ${runtime} adapter, route pieces adjust the adapter's context over real HTTP`, async () => {
    const app = new Hono();
    app.post("/upload", bodyLimit(100_000), async (c) => c.text(String((await c.req.arrayBuffer()).byteLength)));
    app.post("/small", async (c) => c.text(await c.req.text()));
    app.post("/login", rateLimit({ limiter: createFixedWindowLimiter({ limit: 1 }) }), (c) => c.text("checked"));
    const handle = await serveHere(app.fetch, { bodyLimitBytes: 1000, routeBodyLimits: [{ path: "/upload", bytes: 100_000 }] });
    try {
      const base = `http://127.0.0.1:${handle.address.port}`;
      assert.equal(await (await fetch(`${base}/upload`, { method: "POST", body: "x".repeat(50_000) })).text(), "50000");
      assert.equal((await fetch(`${base}/small`, { method: "POST", body: "x".repeat(5000) })).status, 413);
      assert.equal((await fetch(`${base}/login`, { method: "POST" })).status, 200);
      const denied = await fetch(`${base}/login`, { method: "POST" });
      assert.equal(denied.status, 429, "keyed by the peer address the adapter reported");
      await denied.text();
    } finally {
      await handle.shutdown();
    }
  });
  test(`hono middleware: a route that returns no Response (a string, an object; \`c.text\` forgotten) is answered 500 and logged, and a request beside it still answered (a review: the process ended) (${runtime})`, async () => {
    const errors: unknown[] = [];
    const app = new Hono();
    app.use(hygiene({ loadMonitor: false, log: () => {}, onError: (error) => void errors.push(error) }));
    let release = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    app.get("/slow", async (c) => (await held, c.text("slow")));
    app.get("/string", () => "ok" as never);
    app.get("/object", () => ({ ok: true }) as never);
    app.get("/async", async () => "ok" as never);
    const slow = app.request("/slow");
    for (const path of ["/string", "/object", "/async"]) {
      const res = await Promise.race([app.request(path), new Promise<undefined>((resolve) => setTimeout(resolve, 2000))]);
      assert.equal(res?.status, 500, `${path} answered`);
    }
    release();
    assert.equal(await (await slow).text(), "slow");
    assert.equal(errors.length, 3);
  });

  test(`hono middleware: Hono's methodOverride mounted before hygiene() re-dispatches a request that is guarded once; mounted after it, twice (a review: held its permit while its copy waited for one, 503) (${runtime})`, async () => {
    const build = (overrideFirst: boolean) => {
      const denials: string[] = [];
      let runs = 0;
      const app = new Hono();
      if (overrideFirst) app.use("/posts", methodOverride({ app }));
      app.use(hygiene({ loadMonitor: false, concurrencyLimit: 1, shedWaitMs: 50, log: () => {}, onDeny: (e) => void denials.push(`${e.layer}/${e.reason}`) }));
      if (!overrideFirst) app.use("/posts", methodOverride({ app }));
      app.delete("/posts", (c) => (runs++, c.text("deleted")));
      const send = () => app.request("/posts", { method: "POST", body: new URLSearchParams({ _method: "DELETE" }) });
      return { send, denials, runs: () => runs };
    };
    const first = build(true);
    const res = await first.send();
    assert.equal(res.status, 200);
    assert.equal(await res.text(), "deleted");
    assert.deepEqual(first.denials, []);
    assert.equal(first.runs(), 1);
    const after = build(false);
    assert.equal((await after.send()).status, 503, "the outer request holds the one permit its re-dispatched copy waits for");
    assert.deepEqual(after.denials, ["concurrency/queue-timeout"]);
    assert.equal(after.runs(), 0);
  });

  // A review: a Hono app attached with mount() gets a new Request and a new Context, and only
  // mount's options (by default the env) pass from the outer app: route pieces there found no
  // context (500), and a hygiene() there guarded the request again. The README's recipe hands
  // the context and the peer on through mount's optionHandler.
  test(`hono middleware: a Hono app attached with mount() sees the outer hygiene()'s context only when mount's optionHandler hands it on (the README's recipe); then its own hygiene() steps aside (${runtime})`, async () => {
    const build = (recipe: boolean) => {
      const denials: string[] = [];
      const app = new Hono();
      const guard = hygiene({ loadMonitor: false, concurrencyLimit: 1, shedWaitMs: 50, log: () => {}, onDeny: (e) => void denials.push(`${e.layer}/${e.reason}`) });
      app.use(guard);
      const legacy = new Hono();
      legacy.use(guard);
      legacy.get("/ctx", timeout(5_000), (c) => c.text(`context=${hygieneContext(c) !== undefined} peer=${peerOf(c)?.address}`));
      app.mount("/legacy", legacy.fetch, recipe ? { optionHandler: (c) => [{ context: hygieneContext(c), peer: peerOf(c) }] } : undefined);
      return { app, denials };
    };
    const env = { peer: { address: "192.0.2.7" } };
    const bare = build(false);
    const refused = await bare.app.request("/legacy/ctx", {}, env);
    assert.equal(refused.status, 503, "without the recipe the mounted app's hygiene() guards the request again and waits for the permit its original holds");
    assert.deepEqual(bare.denials, ["concurrency/queue-timeout"]);
    const handed = build(true);
    const res = await handed.app.request("/legacy/ctx", {}, env);
    assert.equal(res.status, 200);
    assert.equal(await res.text(), "context=true peer=192.0.2.7");
    assert.deepEqual(handed.denials, []);
  });

  // A review: under hygiene() on Deno.serve the deadline's 408 replaced the late 101 of a route
  // that upgraded, and Deno closed the server's listener.
  test(`hono middleware: on Deno.serve a WebSocket route answering its 101 past requestTimeoutMs gets no 408, and the server serves on${runtime === "deno" ? "" : ` (deno only; skipped on ${runtime})`}`, { skip: runtime !== "deno" }, async () => {
    const { upgradeWebSocket } = await import("hono/deno");
    const denials: string[] = [];
    const app = new Hono();
    app.use(hygiene({ loadMonitor: false, requestTimeoutMs: 150, log: () => {}, onDeny: (e) => void denials.push(`${e.layer}/${e.reason}`) }));
    app.get("/", (c) => c.text("plain"));
    app.get("/ws", async (c, next) => {
      const res = await upgradeWebSocket(() => ({ onMessage: (e, ws) => ws.send(`echo:${e.data}`) }))(c, next);
      await new Promise((r) => setTimeout(r, 400)); // past the deadline
      return res;
    });
    const deno = (globalThis as unknown as { Deno: { serve(o: object, h: (r: Request, i: unknown) => Response | Promise<Response>): { addr: { port: number }; shutdown(): Promise<void> } } }).Deno;
    const server = deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, (r, i) => app.fetch(r, i));
    try {
      const ws = new WebSocket(`ws://127.0.0.1:${server.addr.port}/ws`);
      const echoed = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error("no echo within 5 s")), 5000);
        ws.onopen = () => ws.send("hi");
        ws.onmessage = (e) => (clearTimeout(timer), resolve(String(e.data)));
        ws.onerror = () => (clearTimeout(timer), reject(new Error("the upgrade failed")));
      });
      assert.equal(echoed, "echo:hi");
      ws.close();
      assert.deepEqual(denials, []);
      assert.equal(await (await fetch(`http://127.0.0.1:${server.addr.port}/`)).text(), "plain", "the server serves on");
    } finally {
      await server.shutdown();
    }
  });

});
