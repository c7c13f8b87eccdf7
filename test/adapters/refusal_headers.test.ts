// Browser clients: a refusal without Access-Control-Allow-Origin reaches a browser's fetch as a
// network error — it cannot read the 429/503 or its Retry-After and back off. A review found
// that no refusal of serve() could carry CORS headers (the Hono app's cors() never runs for
// them), and that a 413 replacing the app's answer dropped the headers cors() had set.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { Hono } from "hono";
import { cors } from "hono/cors";
import { bodyLimit, hygieneContext } from "../../src/hono/mod.ts";
import { createFixedWindowLimiter } from "../../src/core/limits/fixed_window.ts";
import type { FaultEvent, HygieneEvent } from "../../src/core/events.ts";
import { serveHere } from "../support/adapter.ts";
import { runtime } from "../support/runtime.ts";

const ORIGIN = "https://app.example";

describe(`refusal headers (${runtime})`, () => {
  test(`serve(): refusalHeaders put the service's CORS headers on every refusal — 503, 429, 413, 408 — and a refusal's own headers win (${runtime})`, { timeout: 20_000 }, async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const app = new Hono();
    app.use(cors({ origin: ORIGIN }));
    app.get("/hold", async (c) => (await held, c.text("held")));
    app.get("/wait", (c) => {
      const signal = hygieneContext(c)!.signal;
      return new Promise<Response>((_, reject) => signal.addEventListener("abort", () => reject(signal.reason)));
    });
    app.get("/", (c) => c.text("ok"));
    app.post("/up", async (c) => c.text(await c.req.text()));
    const handle = await serveHere(app.fetch, {
      concurrencyLimit: 1,
      shedWaitMs: 0,
      bodyLimitBytes: 10,
      requestTimeoutMs: 300,
      rateLimits: [{ limiter: createFixedWindowLimiter({ limit: 1, windowMs: 60_000 }), key: (r) => r.headers.get("x-client") ?? "none" }],
      refusalHeaders: (r) => ({ "access-control-allow-origin": r.headers.get("origin") === ORIGIN ? ORIGIN : "null", "access-control-expose-headers": "Retry-After", "retry-after": "999" }),
    });
    const url = `http://127.0.0.1:${handle.address.port}`;
    const get = (path: string, client: string, init: RequestInit = {}) => fetch(`${url}${path}`, { ...init, headers: { origin: ORIGIN, "x-client": client, ...(init.headers as Record<string, string> | undefined) } });
    const seen = async (res: Response) => {
      await res.body?.cancel();
      return [res.status, res.headers.get("access-control-allow-origin"), res.headers.get("access-control-expose-headers"), res.headers.get("retry-after")];
    };
    try {
      const holding = get("/hold", "a");
      // The holder took the one permit once a second request is refused for it.
      let busy: unknown[] = [];
      for (let i = 0; i < 50; i++) {
        busy = await seen(await get("/", `b${i}`));
        if (busy[0] === 503) break;
        await new Promise((r) => setTimeout(r, 10));
      }
      assert.deepEqual(busy, [503, ORIGIN, "Retry-After", "1"], "the concurrency limit's 503 (a bodiless GET: node's head path)");
      release();
      assert.equal((await holding).status, 200);
      assert.deepEqual(await seen(await get("/", "a")), [429, ORIGIN, "Retry-After", "60"], "the rate limit's 429");
      assert.deepEqual((await seen(await get("/up", "c", { method: "POST", body: "x".repeat(100) }))).slice(0, 3), [413, ORIGIN, "Retry-After"], "the body cap's 413");
      assert.deepEqual((await seen(await get("/wait", "d"))).slice(0, 3), [408, ORIGIN, "Retry-After"], "the deadline's 408");
      // An app's own answer is untouched by them.
      const ok = await get("/", "e");
      assert.equal(ok.status, 200);
      assert.equal(ok.headers.get("access-control-expose-headers"), null);
      await ok.body?.cancel();
    } finally {
      release();
      await handle.shutdown();
    }
  });

  test(`serve(): a refusalHeaders record is added as it is; a function that throws or is async is a fault and the refusal goes out without them (${runtime})`, { timeout: 20_000 }, async () => {
    const events: HygieneEvent[] = [];
    // An async function's promise is no record (a review: its rejection ended the process, its
    // resolved headers never came): a fault, as a throw is.
    const asyncs = [async () => {
      throw new Error("async broken");
    }, async () => ({ "access-control-allow-origin": "*" })] as unknown as (() => Record<string, string>)[];
    for (const refusalHeaders of [{ "access-control-allow-origin": "*" }, () => {
      throw new Error("broken");
    }, ...asyncs]) {
      const handle = await serveHere(() => new Response("ok"), {
        rateLimits: [{ limiter: createFixedWindowLimiter({ limit: 1, windowMs: 60_000 }) }],
        refusalHeaders,
        onEvent: (e) => void events.push(e),
      });
      try {
        const url = `http://127.0.0.1:${handle.address.port}/`;
        assert.equal((await fetch(url)).status, 200);
        const refused = await fetch(url);
        // Framed by its length as without the option (node sent it chunked: the diff review).
        assert.equal(refused.headers.get("content-length"), String((await refused.clone().text()).length));
        await refused.body?.cancel();
        assert.equal(refused.status, 429);
        assert.equal(refused.headers.get("access-control-allow-origin"), typeof refusalHeaders === "function" ? null : "*");
      } finally {
        await handle.shutdown();
      }
    }
    const promised = "TypeError: refusalHeaders returned a promise (an async function?), not a record";
    assert.deepEqual(events.filter((e): e is FaultEvent => e.type === "fault").map((e) => [e.source, e.failed, String(e.error)]), [
      ["refusal-headers", "open", "Error: broken"],
      ["refusal-headers", "open", promised],
      ["refusal-headers", "open", promised],
    ]);
  });

  test(`serve(): refusalHeaders is validated when the guard is made (${runtime})`, async () => {
    await assert.rejects(serveHere(() => new Response("x"), { refusalHeaders: 5 as never }), { name: "TypeError", message: /"refusalHeaders" must be a record of header values or a function of the request: current value is 5/ });
    await assert.rejects(serveHere(() => new Response("x"), { refusalHeaders: { "bad name": "x" } }), { name: "TypeError", message: /"refusalHeaders" must hold valid header names and values/ });
  });

  test(`serve(): the 413 that replaces an app's answer to a body over a route's cap keeps the app's CORS headers (${runtime})`, { timeout: 20_000 }, async () => {
    const app = new Hono();
    app.use(cors({ origin: ORIGIN }));
    // Headers about the app's own body or its caching are not the 413's.
    app.use(async (c, next) => {
      await next();
      c.header("cdn-cache-control", "max-age=600");
      c.header("content-digest", "sha-256=:x:");
    });
    app.post("/small", bodyLimit(10), async (c) => c.text(await c.req.text()));
    const handle = await serveHere(app.fetch, { bodyLimitBytes: 1_000 });
    try {
      const res = await fetch(`http://127.0.0.1:${handle.address.port}/small`, { method: "POST", body: "x".repeat(100), headers: { origin: ORIGIN } });
      await res.body?.cancel();
      assert.equal(res.status, 413);
      assert.equal(res.headers.get("access-control-allow-origin"), ORIGIN);
      assert.equal(res.headers.get("content-type"), "text/plain; charset=utf-8");
      assert.equal(res.headers.get("cdn-cache-control"), null);
      assert.equal(res.headers.get("content-digest"), null);
    } finally {
      await handle.shutdown();
    }
  });
});
