import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { createGuard, type GuardOptions } from "../../../src/core/guard.ts";
import { _exemptMatcher } from "../../../src/core/request/exempt.ts";
import { _capFor } from "../../../src/core/request/body_caps.ts";
import { createManualClock } from "../../../src/testing/manual_clock.ts";
import type { DenyEvent } from "../../../src/core/events.ts";
import { createFixedWindowLimiter } from "../../../src/core/limits/fixed_window.ts";
import { flushMicrotasks } from "../../support/flush.ts";
import { _keyedParts } from "../../../src/core/limits/keyed_gates.ts";
import { post } from "../../support/bodies.ts";

const GET = (path: string) => new Request(`http://localhost:8000${path}`);
const PROBES = ["/healthz", "/readyz", "/metrics"];

function setup(options: GuardOptions, rss = 100) {
  const clock = createManualClock();
  const memory = { rss };
  const host = { clock, rss: () => memory.rss, onShutdownSignal: () => () => {} };
  const denials: DenyEvent[] = [];
  const guard = createGuard({ loadMonitor: false, onDeny: (e) => denials.push(e), ...options }, host);
  return { clock, memory, guard, denials };
}

describe("guard: exempt paths", () => {
  // A review: Bun leaves the URL relative for a request with no or an invalid Host, and the
  // matcher read the path from index 8: "/abc/api/healthz" passed as "/healthz".
  test("exempt: a relative URL (as Bun leaves some) is read from its first character", () => {
    const exempt = _exemptMatcher(["/healthz"])!;
    const at = (url: string) => exempt({ url } as Request);
    assert.equal(at("/abc/api/healthz"), false);
    assert.equal(at("/healthz"), true);
    assert.equal(at("/healthz?x=1"), true);
    assert.equal(at("http://localhost:8000/abc/api/healthz"), false);
    assert.equal(at("http://localhost:8000/healthz"), true);
    // A CONNECT's authority-form (Bun hands it over so) is no path at all.
    assert.equal(at("example.com:443/healthz"), false);
    assert.equal(at("a:1/u/healthz"), false);
    // A route cap is found for the same path the app routes on.
    const routes = [{ path: "/upload", bytes: 16 }];
    assert.equal(_capFor({ url: "/a/upload", method: "POST" } as Request, 1000, routes), 1000);
    assert.equal(_capFor({ url: "/upload", method: "POST" } as Request, 1000, routes), 16);
    assert.equal(_capFor({ url: "a:1/u/upload", method: "POST" } as Request, 1000, routes), 1000);
  });

  // A review: Deno hands the target as the client wrote it; a URL parser reads
  // "http://evil?x/healthz" as "/" and "/a/../login" as "/login", the first "/" after the host
  // says "/healthz" and "/a/../login". A probe path then skipped the shedding gates for the "/"
  // handler, and a route's lowered cap missed its own handler.
  test("exempt and route caps: where a URL parser reads another path (a host part holding ? # \\, a dot segment), no exemption, and the smaller cap of the two readings", () => {
    const exempt = _exemptMatcher(["/healthz"])!;
    const at = (url: string) => exempt({ url } as Request);
    for (const odd of ["http://evil?x/healthz", "http://evil#x/healthz", "http://evil\\/healthz"]) assert.equal(at(odd), false, odd);
    assert.equal(at("http://evil/x#/healthz"), false);
    assert.equal(at("http://evil/healthz"), true, "an absolute-form target with a plain host is its path");
    const routes = [
      { path: "/login", bytes: 10 },
      { path: "/upload", bytes: 100_000 },
      { path: "/files/*", bytes: 50_000 },
    ];
    const cap = (url: string) => _capFor({ url, method: "POST" } as Request, 1000, routes);
    assert.equal(cap("http://h/login"), 10);
    for (const url of ["http://h/a/../login", "http://h/./login", "http://h/%2e/login", "http://h/x/%2E%2E/login", "http://h/x\\..\\login"]) assert.equal(cap(url), 10, url);
    assert.equal(cap("http://evil?x/upload"), 1000, "a URL parser's \"/\": the service cap, not /upload's raise");
    assert.equal(cap("http://evil#x/upload"), 1000);
    assert.equal(cap("http://h/x/../upload"), 1000, "the raw path's cap is smaller: a router matching the raw text gets no raise");
    assert.equal(cap("http://h/files/../login"), 10, "the smaller of /files/*'s and /login's");
    assert.equal(cap("http://h/.well-known/x"), 1000, "a dot that is no segment reads the same both ways");
    assert.equal(cap("http://h/upload"), 100_000);
    // The scheme as the client wrote it (Deno hands it over so): still the path after the host (a diff review).
    assert.equal(cap("HTTP://evil/login"), 10);
    assert.equal(cap("Http://h/x/../login"), 10);
    assert.equal(at("HTTP://evil/healthz"), true);
    assert.equal(at("HTTP://evil?x/healthz"), false);
    // A route's method whatever the case it was sent in (Deno hands "patch" over as sent: a review).
    const patch = [{ path: "/x", method: "PATCH", bytes: 5 }];
    for (const method of ["PATCH", "patch", "Patch"]) assert.equal(_capFor({ url: "http://h/x", method } as Request, 1000, patch), 5, method);
    assert.equal(_capFor({ url: "http://h/x", method: "POST" } as Request, 1000, patch), 1000);
  });

  test("exempt: with the memory ceiling tripped, probe and metrics paths are answered; every other path gets 503", async () => {
    const { clock, memory, guard, denials } = setup({ memory: { ceilingBytes: 1000, intervalMs: 1000 }, exempt: PROBES });
    const fetch = guard.wrap((request) => new Response(new URL(request.url).pathname));
    memory.rss = 2000;
    clock.advance(1000);
    assert.equal(guard.memory!.shedding, true);
    for (const path of PROBES) {
      const res = await fetch(GET(path));
      assert.equal(res.status, 200, path);
      assert.equal(await res.text(), path);
    }
    assert.equal((await fetch(GET("/healthz?full=1"))).status, 200, "a query does not change the path");
    for (const path of ["/", "/healthz/x", "/healthzz", "/metric", "/api/healthz"]) {
      assert.equal((await fetch(GET(path))).status, 503, path);
    }
    assert.deepEqual(new Set(denials.map((d) => d.layer)), new Set(["memory"]));
    guard.dispose();
  });

  test("exempt: while the load monitor is busy and every permit is taken, an exempt path still runs and takes no permit", async () => {
    const { guard } = setup({ exempt: ["/healthz"], loadMonitor: { minAdmitShare: 0.01 }, concurrencyLimit: 1, shedWaitMs: 0 });
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const fetch = guard.wrap(async (request) => {
      if (request.url.endsWith("/slow")) await gate;
      return new Response("ok");
    });
    const slow = fetch(GET("/slow"));
    await flushMicrotasks();
    assert.equal(guard.inFlight, 1);
    assert.equal((await fetch(GET("/"))).status, 503, "the concurrency limit is full");
    assert.equal((await fetch(GET("/healthz"))).status, 200);
    guard.load!.record(500);
    assert.equal(guard.load!.busy, true);
    assert.equal((await fetch(GET("/"))).status, 503, "the load monitor sheds");
    assert.equal((await fetch(GET("/healthz"))).status, 200);
    assert.equal(guard.inFlight, 1, "the probe held no permit");
    release();
    assert.equal((await slow).status, 200);
    guard.dispose();
  });

  test("exempt: during a drain an exempt path reaches its handler (readiness answers for itself); others get 503 + close", async () => {
    const stop = new AbortController();
    const { guard } = setup({ exempt: ["/readyz"], shutdown: stop });
    const fetch = guard.wrap(() => new Response("not ready", { status: 503 }));
    stop.abort();
    const probe = await fetch(GET("/readyz"));
    assert.equal(probe.status, 503);
    assert.equal(await probe.text(), "not ready", "the handler's own answer");
    const other = await fetch(GET("/"));
    assert.equal(other.status, 503);
    assert.equal(other.headers.get("connection"), "close");
    assert.equal(await other.text(), "Service Unavailable");
  });

  test("exempt: an exempt path still meets the per-client rate limit, the body cap and the request timeout", async () => {
    const { clock, guard } = setup({
      exempt: ["/metrics", "/upload"],
      bodyLimitBytes: 4,
      requestTimeoutMs: 1000,
      rateLimits: [{ limiter: createFixedWindowLimiter({ limit: 3, windowMs: 60_000, name: "ip" }) }],
    });
    const fetch = guard.wrap(async (request) => {
      if (request.url.endsWith("/metrics?hang")) return new Promise<Response>(() => {});
      if (request.body !== null) await request.text();
      return new Response("ok");
    });
    const info = { peer: { address: "10.0.0.1", port: 1 } };
    assert.equal((await fetch(post("too long a body", { "content-length": "15" }), info)).status, 413);
    const hanging = fetch(GET("/metrics?hang"), info);
    await flushMicrotasks();
    clock.advance(1000);
    assert.equal((await hanging).status, 408);
    assert.equal((await fetch(GET("/metrics"), info)).status, 200, "the third request in the window");
    assert.equal((await fetch(GET("/metrics"), info)).status, 429, "the fourth request in the window");
    guard.dispose();
  });

  test("exempt: a rate rule's skip leaves the health probes unmetered by it, the other rules and paths metered as before; gate 5 then needs the request (not run from Node's head)", async () => {
    const health = (request: Request) => request.url.endsWith("/healthz");
    const info = { peer: { address: "10.0.0.1", port: 1 } };
    // One rule (asked directly) and two (the scoped limiter).
    for (const two of [false, true]) {
      const ip = createFixedWindowLimiter({ limit: 2, windowMs: 60_000, name: "ip" });
      const global = createFixedWindowLimiter({ limit: 100, windowMs: 60_000, name: "global" });
      const rateLimits = two ? [{ limiter: global, key: () => "all" }, { limiter: ip, skip: health }] : [{ limiter: ip, skip: health }];
      const { guard } = setup({ exempt: PROBES, rateLimits });
      const fetch = guard.wrap(() => new Response("ok"));
      const statuses: number[] = [];
      for (const path of ["/", "/metrics", "/", "/healthz", "/healthz", "/healthz", "/metrics"]) statuses.push((await fetch(GET(path), info)).status);
      assert.deepEqual(statuses, [200, 200, 429, 200, 200, 200, 429]);
      if (two) assert.equal(global.peek("all").remaining, 100 - 5 - 1, "the global rule metered all but the refused (a peek reports as if charged)");
      guard.dispose();
    }
    assert.equal(_keyedParts({ rateLimits: [{ limiter: createFixedWindowLimiter(), skip: health }] }, () => {})!.fromHead, false);
    assert.equal(_keyedParts({ rateLimits: [{ limiter: createFixedWindowLimiter() }] }, () => {})!.fromHead, true);
  });

  test("exempt: a predicate decides which requests are exempt", async () => {
    const { clock, memory, guard } = setup({
      memory: { ceilingBytes: 1000, intervalMs: 1000 },
      exempt: (request) => request.headers.get("user-agent")?.startsWith("kube-probe/") === true,
    });
    const fetch = guard.wrap(() => new Response("ok"));
    memory.rss = 2000;
    clock.advance(1000);
    assert.equal((await fetch(new Request("http://localhost/", { headers: { "user-agent": "kube-probe/1.30" } }))).status, 200);
    assert.equal((await fetch(GET("/"))).status, 503);
    guard.dispose();
  });

  test("exempt: bad options throw naming the field", () => {
    assert.throws(() => createGuard({ exempt: "/healthz" as never }), /Cannot create guard as "exempt" must be an array of paths or a function: current value is "\/healthz"/);
    assert.throws(() => createGuard({ exempt: ["healthz"] }), (e) => e instanceof RangeError && /"exempt\[0\]" must be a path starting with "\/"/.test(e.message));
    assert.throws(() => createGuard({ exempt: ["/ok", "/a?b"] }), /"exempt\[1\]"/);
    assert.throws(() => createGuard({ exempt: [42 as never] }), /"exempt\[0\]".*current value is 42/);
  });
});
