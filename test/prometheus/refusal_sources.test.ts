// Every refusal the library makes reaches onDeny and the Prometheus exporter: one test per
// refusal source, each on a real prom-client registry, over real HTTP to a real server on
// port 0 (except the framing gate, which no runtime lets a malformed length reach: driven
// in process). The README's "Refusal sources" table is checked against what these observe.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { Hono } from "hono";
import { createFixedWindowLimiter } from "../../src/core/limits/fixed_window.ts";
import { createGuard } from "../../src/core/guard.ts";
import type { DenyEvent } from "../../src/core/events.ts";
import type { ServeHandle, ServeOptions } from "../../src/core/serve.ts";
import { bodyLimit, hygiene, inFlightCap, rateLimit, timeout } from "../../src/hono/mod.ts";
import { createPrometheusExporter, type PrometheusExporter } from "../../src/prometheus/mod.ts";
import { createManualClock } from "../../src/testing/manual_clock.ts";
import { serveHere } from "../support/adapter.ts";
import { parsePromText, valueOf } from "../support/prom_text.ts";
import { rawConnect, type RawConnection } from "../support/raw_http.ts";
import { openSock, parseResponse, within } from "../support/reliability.ts";
import { ownServer } from "../support/own_server.ts";
import { runtime } from "../support/runtime.ts";

const TIMEOUT = { timeout: 15_000 };

/** Every `layer:reason` a test of this file saw reach onDeny. */
const observed = new Set<string>();

/** A real registry and the deny events onDeny saw, wired into serve options. */
function watch() {
  const metrics = createPrometheusExporter();
  const denies: DenyEvent[] = [];
  const sinks = {
    onEvent: metrics.onEvent,
    onDeny: (e: DenyEvent) => {
      denies.push(e);
      observed.add(`${e.layer}:${e.reason}`);
    },
  };
  return { metrics, denies, sinks };
}

/** The count of one `serve_hygiene_denials_total` series (0 when absent). */
async function denials(metrics: PrometheusExporter, layer: string, reason: string): Promise<number> {
  return valueOf(parsePromText(await metrics.render()), "serve_hygiene_denials_total", { layer, reason }) ?? 0;
}

async function rateDenials(metrics: PrometheusExporter, cls: string, scope: string): Promise<number> {
  return valueOf(parsePromText(await metrics.render()), "serve_hygiene_rate_limit_denials_total", { class: cls, scope }) ?? 0;
}

/** One request on a fresh connection; its status (the body is read, so nothing is left open). */
async function status(port: number, path: string, init?: RequestInit): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, init);
  await res.arrayBuffer().catch(() => {});
  return res.status;
}

/** A handler that holds its request until released, counting how many started. */
function holder() {
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  let started = 0;
  const waitStarted = async (n: number) => {
    while (started < n) await new Promise((r) => setTimeout(r, 5));
  };
  return { held, release, waitStarted, started: () => started, enter: () => void started++ };
}

/** Opens a connection and sends a raw GET on it (kept open: its request is in flight). */
async function openGet(port: number, path: string, open: RawConnection[]): Promise<RawConnection> {
  const conn = await rawConnect(port);
  open.push(conn);
  conn.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`);
  return conn;
}

/** Serves `handler` quietly on port 0 and always shuts it down. */
async function withServer(
  handler: Parameters<typeof serveHere>[0],
  options: ServeOptions,
  run: (handle: ServeHandle) => Promise<void>,
): Promise<void> {
  const handle = await serveHere(handler, options);
  try {
    await run(handle);
  } finally {
    await handle.shutdown().catch(() => {});
  }
}

function assertSaw(denies: DenyEvent[], layer: string, reason: string, status: number) {
  const hit = denies.filter((e) => e.layer === layer && e.reason === reason);
  assert.equal(hit.length, 1, `onDeny saw ${JSON.stringify(denies)}`);
  assert.equal(hit[0]!.status, status);
}

describe(`refusal sources: every refusal reaches onDeny and the exporter (${runtime})`, () => {
  const onNode = runtime === "node";
  test(`refusal sources: connection cap (gate 0) → connection/over-cap${onNode ? "" : ` (skipped on ${runtime}: only node:http has a connection hook)`}`, { ...TIMEOUT, skip: !onNode }, async () => {
    const { metrics, denies, sinks } = watch();
    const h = holder();
    const open: RawConnection[] = [];
    await withServer(async () => (h.enter(), await h.held, new Response("ok")), { maxConnections: 1, ...sinks }, async (handle) => {
      try {
        await openGet(handle.address.port, "/", open);
        await h.waitStarted(1);
        const refused = await openGet(handle.address.port, "/", open);
        assert.equal((await refused.response()).status, 503);
        assert.equal(await denials(metrics, "connection", "over-cap"), 1);
        assertSaw(denies, "connection", "over-cap", 503);
      } finally {
        h.release();
        for (const c of open) c.destroy();
      }
    });
  });

  test("refusal sources: draining (gate 1, app-level hygiene()) → draining/draining", TIMEOUT, async () => {
    const { metrics, denies, sinks } = watch();
    const stop = new AbortController();
    const app = new Hono();
    app.use(hygiene({ shutdown: stop, ...sinks }));
    app.get("/", (c) => c.text("ok"));
    // On the runtime's own server: under serve() hygiene() steps aside (serve()'s guard applies).
    const server = await ownServer(app.fetch);
    try {
      assert.equal(await status(server.port, "/"), 200);
      stop.abort();
      assert.equal(await status(server.port, "/"), 503);
      assert.equal(await denials(metrics, "draining", "draining"), 1);
      assertSaw(denies, "draining", "draining", 503);
    } finally {
      await server.close();
    }
  });

  test("refusal sources: memory ceiling (gate 2) → memory/over-ceiling", TIMEOUT, async () => {
    const { metrics, denies, sinks } = watch();
    // 1 MiB is below any process: the first reading trips it.
    await withServer(() => new Response("ok"), { memory: { ceilingBytes: 1024 * 1024, collect: false }, ...sinks }, async (handle) => {
      assert.equal(await status(handle.address.port, "/"), 503);
      assert.equal(await denials(metrics, "memory", "over-ceiling"), 1);
      assertSaw(denies, "memory", "over-ceiling", 503);
    });
  });

  test("refusal sources: load monitor (gate 3) → load/busy", TIMEOUT, async () => {
    const { metrics, denies, sinks } = watch();
    // The probe runs on a manual clock, so only the sample fed here moves it. The manual clock
    // has no setImmediate, so the refusal is held shedWaitMs (on the same clock) before it is sent.
    const clock = createManualClock();
    // The probe's interval is out of reach of the advance below: a probe that read the loop
    // normal again within the hold would start the held request instead.
    await withServer(() => new Response("ok"), { clock, loadMonitor: { sampleIntervalMs: 600_000 }, ...sinks }, async (handle) => {
      assert.equal(await status(handle.address.port, "/"), 200, "the first request starts the probe");
      handle.guard.load!.record(100_000);
      const refused = status(handle.address.port, "/");
      while (handle.guard.waitingForTurn === 0) await new Promise((resolve) => setTimeout(resolve, 5));
      assert.equal(await denials(metrics, "load", "busy"), 0, "held: not sent, not counted yet");
      clock.advance(handle.guard.concurrency.shedWaitMs);
      assert.equal(await refused, 503);
      assert.equal(await denials(metrics, "load", "busy"), 1);
      assertSaw(denies, "load", "busy", 503);
    });
  });

  test("refusal sources: a request with a body that no Request can be copied from (Bun: an invalid Host leaves its URL relative; in process here) → framing/malformed-target", async () => {
    const { metrics, denies, sinks } = watch();
    const guard = createGuard({ clock: createManualClock(), ...sinks });
    try {
      const fetch = guard.wrap(() => new Response("never"));
      const relative = { url: "/x", method: "POST", headers: new Headers({ "content-length": "3" }), body: new Blob(["abc"]).stream(), signal: new AbortController().signal } as unknown as Request;
      const res = await fetch(relative);
      assert.equal(res.status, 400);
      assert.equal(await denials(metrics, "framing", "malformed-target"), 1);
      assertSaw(denies, "framing", "malformed-target", 400);
    } finally {
      guard.dispose();
    }
  });

  test("refusal sources: framing (gate 4; every runtime's own parser answers these first, so in process) → framing/malformed-length", async () => {
    const { metrics, denies, sinks } = watch();
    const guard = createGuard({ clock: createManualClock(), ...sinks });
    try {
      const fetch = guard.wrap(() => new Response("never"));
      const res = await fetch(new Request("http://localhost/", { method: "POST", body: "abc", headers: { "content-length": "1e3" } }));
      assert.equal(res.status, 400);
      assert.equal(await denials(metrics, "framing", "malformed-length"), 1);
      assertSaw(denies, "framing", "malformed-length", 400);
    } finally {
      guard.dispose();
    }
  });

  test("refusal sources: keyed rate limit (gate 5) → rate/over-limit, with class and scope", TIMEOUT, async () => {
    const { metrics, denies, sinks } = watch();
    const limiter = createFixedWindowLimiter({ limit: 1, windowMs: 60_000, name: "ip" });
    await withServer(() => new Response("ok"), { rateLimits: [{ limiter, scope: "ip" }], ...sinks }, async (handle) => {
      assert.equal(await status(handle.address.port, "/"), 200);
      assert.equal(await status(handle.address.port, "/"), 429);
      assert.equal(await denials(metrics, "rate", "over-limit"), 1);
      assert.equal(await rateDenials(metrics, "ip", "ip"), 1);
      assertSaw(denies, "rate", "over-limit", 429);
    });
  });

  test("refusal sources: a client key that throws (gate 5, fails closed) → rate/limiter-error", TIMEOUT, async () => {
    const { metrics, denies, sinks } = watch();
    const limiter = createFixedWindowLimiter({ limit: 10, name: "ip" });
    const clientKey = () => {
      throw new Error("no key");
    };
    await withServer(() => new Response("ok"), { rateLimits: [{ limiter }], clientKey, ...sinks }, async (handle) => {
      assert.equal(await status(handle.address.port, "/"), 429);
      assert.equal(await denials(metrics, "rate", "limiter-error"), 1);
      assertSaw(denies, "rate", "limiter-error", 429);
    });
  });

  test("refusal sources: per-key in-flight cap (gate 6) → peer/peer-busy", TIMEOUT, async () => {
    const { metrics, denies, sinks } = watch();
    const h = holder();
    const open: RawConnection[] = [];
    const handler = async (request: Request) => {
      if (new URL(request.url).pathname === "/hold") (h.enter(), await h.held);
      return new Response("ok");
    };
    await withServer(handler, { inFlightPerKey: { perKey: 1 }, ...sinks }, async (handle) => {
      try {
        await openGet(handle.address.port, "/hold", open);
        await h.waitStarted(1);
        assert.equal(await status(handle.address.port, "/"), 429);
        assert.equal(await denials(metrics, "peer", "peer-busy"), 1);
        assertSaw(denies, "peer", "peer-busy", 429);
      } finally {
        h.release();
        for (const c of open) c.destroy();
      }
    });
  });

  // Gate 7: the refusal with no admission queue, after a wait past shedWaitMs, and with the
  // queue full: each its own reason.
  for (const [title, options, reason] of [
    ["no admission queue", { shedWaitMs: 0 }, "shed"],
    ["a wait in the admission queue past shedWaitMs", { shedWaitMs: 20 }, "queue-timeout"],
    ["the admission queue full", { maxWaiting: 0 }, "queue-full"],
  ] as const) {
    test(`refusal sources: concurrency limit (gate 7), ${title} → concurrency/${reason}`, TIMEOUT, async () => {
      const { metrics, denies, sinks } = watch();
      const h = holder();
      const open: RawConnection[] = [];
      const handler = async (request: Request) => {
        if (new URL(request.url).pathname === "/hold") (h.enter(), await h.held);
        return new Response("ok");
      };
      await withServer(handler, { concurrencyLimit: 1, ...options, ...sinks }, async (handle) => {
        try {
          await openGet(handle.address.port, "/hold", open);
          await h.waitStarted(1);
          assert.equal(await status(handle.address.port, "/"), 503);
          assert.equal(await denials(metrics, "concurrency", reason), 1);
          assertSaw(denies, "concurrency", reason, 503);
        } finally {
          h.release();
          for (const c of open) c.destroy();
        }
      });
    });
  }


  test("refusal sources: body cap, declared length (gate 8) → body/over-cap before the handler", TIMEOUT, async () => {
    const { metrics, denies, sinks } = watch();
    let calls = 0;
    await withServer(() => (calls++, new Response("ok")), { bodyLimitBytes: 10, ...sinks }, async (handle) => {
      assert.equal(await status(handle.address.port, "/", { method: "POST", body: "x".repeat(100) }), 413);
      assert.equal(calls, 0);
      assert.equal(await denials(metrics, "body", "over-cap"), 1);
      assertSaw(denies, "body", "over-cap", 413);
    });
  });

  test("refusal sources: body cap while the body is read (gate 8, chunked) → body/over-cap", TIMEOUT, async () => {
    const { metrics, denies, sinks } = watch();
    const handler = async (request: Request) => new Response(String((await request.arrayBuffer()).byteLength));
    await withServer(handler, { bodyLimitBytes: 10, ...sinks }, async (handle) => {
      const sock = await openSock(handle.address.port);
      try {
        sock.write("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n14\r\nxxxxxxxxxxxxxxxxxxxx\r\n0\r\n\r\n");
        // The connection closes after the 413 (on Deno its text is not terminated: README).
        await within(sock.closed, "the connection closing after the 413");
        assert.equal(parseResponse(sock.received(), true)?.status, 413);
        assert.equal(await denials(metrics, "body", "over-cap"), 1);
        assertSaw(denies, "body", "over-cap", 413);
      } finally {
        sock.destroy();
      }
    });
  });

  test("refusal sources: request timeout (gate 9) → timeout/deadline", TIMEOUT, async () => {
    const { metrics, denies, sinks } = watch();
    const clock = createManualClock();
    const h = holder();
    const handler = async (_request: Request, { context }: { context: { signal: AbortSignal } }) => {
      h.enter();
      await new Promise((resolve) => context.signal.addEventListener("abort", resolve, { once: true }));
      return new Response("late");
    };
    await withServer(handler, { clock, requestTimeoutMs: 1_000, drainTimeoutMs: 5_000, ...sinks }, async (handle) => {
      const res = status(handle.address.port, "/");
      await h.waitStarted(1);
      clock.advance(1_000);
      assert.equal(await res, 408);
      assert.equal(await denials(metrics, "timeout", "deadline"), 1);
      assertSaw(denies, "timeout", "deadline", 408);
    });
  });

  test("refusal sources: a forced drain's answer to a request still running → draining/forced", TIMEOUT, async () => {
    const { metrics, denies, sinks } = watch();
    const h = holder();
    const open: RawConnection[] = [];
    // The handler ignores its signal: only the forced drain answers it.
    const handle = await serveHere(async () => (h.enter(), await h.held, new Response("late")), {
      requestTimeoutMs: Infinity,
      drainTimeoutMs: 100,
      ...sinks,
    });
    try {
      const conn = await openGet(handle.address.port, "/", open);
      await h.waitStarted(1);
      const outcome = await handle.shutdown();
      assert.equal(outcome.outcome, "forced");
      // serve() set the process's exit code to 3 (forced); this test process is not forced.
      if (runtime === "deno") Deno.exitCode = 0;
      else process.exitCode = 0;
      assert.equal((await conn.response()).status, 503);
      assert.equal(await denials(metrics, "draining", "forced"), 1);
      assertSaw(denies, "draining", "forced", 503);
    } finally {
      h.release();
      for (const c of open) c.destroy();
    }
  });

  test("refusal sources: Hono's route-level rateLimit() → rate/over-limit, through the adapter's sinks", TIMEOUT, async () => {
    const { metrics, denies, sinks } = watch();
    const app = new Hono();
    app.post("/login", rateLimit({ limiter: createFixedWindowLimiter({ limit: 1, windowMs: 60_000, name: "auth" }) }), (c) => c.text("checked"));
    await withServer(app.fetch, sinks, async (handle) => {
      assert.equal(await status(handle.address.port, "/login", { method: "POST" }), 200);
      assert.equal(await status(handle.address.port, "/login", { method: "POST" }), 429);
      assert.equal(await denials(metrics, "rate", "over-limit"), 1);
      assert.equal(await rateDenials(metrics, "auth", "route"), 1);
      assertSaw(denies, "rate", "over-limit", 429);
      assert.equal(denies[0]!.limiterClass, "auth");
      assert.equal(denies[0]!.scope, "route");
    });
  });

  test("refusal sources: Hono's route-level rateLimit() under app-level hygiene() → rate/over-limit, through hygiene()'s sinks", TIMEOUT, async () => {
    const { metrics, denies, sinks } = watch();
    const outer = watch();
    const app = new Hono();
    app.use(hygiene(sinks));
    app.post("/login", rateLimit({ limiter: createFixedWindowLimiter({ limit: 1, windowMs: 60_000, name: "auth" }), scope: "login" }), (c) => c.text("checked"));
    const server = await ownServer(app.fetch);
    try {
      assert.equal(await status(server.port, "/login", { method: "POST" }), 200);
      assert.equal(await status(server.port, "/login", { method: "POST" }), 429);
      assert.equal(await rateDenials(metrics, "auth", "login"), 1);
      assertSaw(denies, "rate", "over-limit", 429);
    } finally {
      await server.close();
    }
    // Under serve() hygiene() steps aside: the route's refusal reaches serve()'s sinks, once.
    const stepped = new Hono();
    stepped.use(hygiene(watch().sinks));
    stepped.post("/login", rateLimit({ limiter: createFixedWindowLimiter({ limit: 1, windowMs: 60_000, name: "auth2" }), scope: "login" }), (c) => c.text("checked"));
    await withServer(stepped.fetch, outer.sinks, async (handle) => {
      assert.equal(await status(handle.address.port, "/login", { method: "POST" }), 200);
      assert.equal(await status(handle.address.port, "/login", { method: "POST" }), 429);
      assertSaw(outer.denies, "rate", "over-limit", 429);
      assert.equal(outer.denies.length, 1);
    });
  });

  test("refusal sources: Hono's route-level inFlightCap() → peer/peer-busy", TIMEOUT, async () => {
    const { metrics, denies, sinks } = watch();
    const h = holder();
    const open: RawConnection[] = [];
    const app = new Hono();
    app.get("/export", inFlightCap({ perKey: 1, name: "export" }), async (c) => (h.enter(), await h.held, c.text("done")));
    await withServer(app.fetch, sinks, async (handle) => {
      try {
        await openGet(handle.address.port, "/export", open);
        await h.waitStarted(1);
        assert.equal(await status(handle.address.port, "/export"), 429);
        assert.equal(await denials(metrics, "peer", "peer-busy"), 1);
        assertSaw(denies, "peer", "peer-busy", 429);
        assert.equal(denies[0]!.limiterClass, "export");
      } finally {
        h.release();
        for (const c of open) c.destroy();
      }
    });
  });

  test("refusal sources: Hono's route-level bodyLimit() below the service cap → body/over-cap", TIMEOUT, async () => {
    const { metrics, denies, sinks } = watch();
    const app = new Hono();
    app.post("/tiny", bodyLimit(10), (c) => c.text("never"));
    await withServer(app.fetch, { bodyLimitBytes: 1000, ...sinks }, async (handle) => {
      assert.equal(await status(handle.address.port, "/tiny", { method: "POST", body: "x".repeat(100) }), 413);
      assert.equal(await denials(metrics, "body", "over-cap"), 1);
      assertSaw(denies, "body", "over-cap", 413);
    });
  });

  test("refusal sources: Hono's route-level timeout() → timeout/deadline", TIMEOUT, async () => {
    const { metrics, denies, sinks } = watch();
    const clock = createManualClock();
    const h = holder();
    const app = new Hono();
    app.get("/short", timeout(100), async (c) => {
      h.enter();
      await h.held;
      return c.text("late");
    });
    await withServer(app.fetch, { clock, requestTimeoutMs: 1_000, drainTimeoutMs: 5_000, ...sinks }, async (handle) => {
      try {
        const res = status(handle.address.port, "/short");
        await h.waitStarted(1);
        clock.advance(100);
        assert.equal(await res, 408);
        assert.equal(await denials(metrics, "timeout", "deadline"), 1);
        assertSaw(denies, "timeout", "deadline", 408);
      } finally {
        h.release();
      }
    });
  });

  // What the tests above cannot drive over HTTP, with why; each is still a row of the README.
  const NOT_DRIVEN_HERE: Record<string, string> = {
    "rate:table-full": "a flood of distinct networks filling both key tables (test/core/limits)",
    "peer:busy": "the per-key table full of keys with work in flight (test/core/limits)",
    "peer:limiter-error": "the in-flight limiter's own state broken (test/core/limits)",
    "concurrency:aborted": "the client left during a shed wait (test/core/guard.test.ts)",
    "peer:aborted": "the client left while waiting for its key's slot (test/core/guard.test.ts)",
    "flow:queue-full": "a flow queue worker over its share of the capacity (test/core/limits/flow_queue.test.ts)",
    "load:batch": "one loop turn admitting for longer than maxBatchMs (test/core/gates/load.test.ts)",
    "load:aborted": "the client left while waiting for a later turn (test/core/gates/load_wait.test.ts)",
    "rate:aborted": "the client reset its connection before its address was read (test/adapters/peer_reset.test.ts, test/hono/middleware.test.ts)",
    ...(onNode ? {} : { "connection:over-cap": "only node:http has a connection hook" }),
  };

  // Runs last (tests of a describe run in order): the README's table must list exactly what
  // the tests above saw reach onDeny, plus the sources named in NOT_DRIVEN_HERE.
  test("refusal sources: the README's table lists exactly the deny events the library emits", () => {
    const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
    const section = readme.split(/^### Refusal sources$/m)[1]?.split(/^#{2,3} /m)[0];
    assert.ok(section !== undefined, "README has a '### Refusal sources' section");
    const rows = new Set<string>();
    for (const m of section.matchAll(/^\| [^|]+ \| `([a-z-]+)` \| `([a-z-]+)` \|/gm)) rows.add(`${m[1]}:${m[2]}`);
    const expected = new Set([...observed, ...Object.keys(NOT_DRIVEN_HERE)]);
    assert.deepEqual([...rows].sort(), [...expected].sort(), "the README's refusal sources match the deny events the library emits");
  });
});
