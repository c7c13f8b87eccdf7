import { describe, test } from "node:test";
import { createServer } from "node:net";
import { readFileSync } from "node:fs";
import assert from "node:assert/strict";
import { runtime, startChild } from "../support/runtime.ts";
import { openSock, parseResponse, type Sock, within } from "../support/reliability.ts";
import { parsePromText } from "../support/prom_text.ts";
import { ConfigError, configErrorFrom, readEdgeConfig } from "../../examples/edge/config.ts";
import { createAuthLimiter, createEdgeApp } from "../../examples/edge/app.ts";
import { Hono } from "hono";
import { hygiene } from "../../src/hono/mod.ts";

describe(`examples: edge server (${runtime})`, () => {
  test(`edge server: boots on port 0 under ${runtime}, serves every route, drains clean on SIGTERM`, async () => {
    const child = startChild("examples/edge-server.ts", {
      PORT: "0",
      HOST: "127.0.0.1",
      HYGIENE_BODY_LIMIT_BYTES: "1000",
      HYGIENE_UPLOAD_LIMIT_BYTES: "100000",
      HYGIENE_DRAIN_TIMEOUT_MS: "5000",
      HYGIENE_REQUEST_TIMEOUT_MS: "4000",
      // The load monitor has its own tests; here it would only make a busy CI box shed.
      HYGIENE_LOAD_MONITOR: "off",
    });
    try {
      const listening = JSON.parse(await child.waitForLine(/"listening"/));
      assert.equal(listening.runtime, runtime);
      assert.equal(listening.config.uploadLimitBytes, 100_000, "effective values are printed at startup");
      const base = `http://127.0.0.1:${listening.port}`;
      assert.match(await (await fetch(`${base}/`)).text(), /hello/);
      assert.deepEqual(await (await fetch(`${base}/work?ms=10`)).json(), { worked: 10 });
      assert.deepEqual(await (await fetch(`${base}/upload`, { method: "POST", body: "x".repeat(50_000) })).json(), { bytes: 50_000 });
      const tooBig = await fetch(`${base}/upload`, { method: "POST", body: "x".repeat(100_001) });
      assert.equal(tooBig.status, 413);
      // Deno drops the connection after the refusal's text (README, capability table): its
      // body may not end cleanly there, so it is not read.
      await tooBig.body?.cancel();
      // A declared length over the service cap to a route that never reads its body: refused
      // before the route runs.
      const unread = await fetch(`${base}/work?ms=1`, { method: "POST", body: "x".repeat(2000) });
      assert.equal(unread.status, 413);
      await unread.body?.cancel();
      assert.match(await (await fetch(`${base}/events?count=2&every=10`)).text(), /data: tick 0\n\n.*data: tick 1/s);
      assert.equal((await fetch(`${base}/login`, { method: "POST" })).status, 401);
      assert.equal((await fetch(`${base}/healthz`)).status, 200);
      assert.equal((await fetch(`${base}/readyz`)).status, 200);
      const metrics = parsePromText(await (await fetch(`${base}/metrics`)).text()).samples;
      const denials = metrics.filter((s) => s.name === "serve_hygiene_denials_total" && s.labels.layer === "body");
      assert.equal(denials.reduce((n, s) => n + s.value, 0), 2, "both 413s were counted");
      assert.ok(metrics.some((s) => s.name === "serve_hygiene_limiter_keys" && s.labels.class === "ip" && s.value >= 1));
      child.kill("SIGTERM");
      const drained = JSON.parse(await child.waitForLine(/"drained"/));
      assert.equal(drained.outcome, "clean");
      assert.equal(drained.reason, "SIGTERM");
      assert.equal(await child.exited, 0);
    } finally {
      child.kill();
    }
  });

  // The deploy review: /events?every=12000 was cut on Bun by its 10 s idle timer between ticks.
  test(`edge server: /events sends a comment between ticks more than 5 s apart, so a quiet stream is not cut as idle (${runtime})`, { timeout: 30_000 }, async () => {
    const app = new Hono();
    app.use(hygiene({ loadMonitor: false, log: () => {} })); // the routes' pieces (noTimeout()) need a guard's context
    app.route("/", createEdgeApp({ config: readEdgeConfig({}), health: () => undefined, metrics: async () => "", authLimiter: createAuthLimiter() }));
    const res = await app.request("/events?count=2&every=5001");
    assert.equal(await res.text(), "id: 0\ndata: tick 0\n\n: keep-alive\n\nid: 1\ndata: tick 1\n\n");
  });

  test(`edge server: with the memory ceiling tripped, ordinary routes get 503 while /healthz and /metrics answer 200 and /readyz 503 (${runtime})`, async () => {
    // A ceiling of 1 MB is below any process: the first sample trips it.
    const child = startChild("examples/edge-server.ts", {
      PORT: "0",
      HOST: "127.0.0.1",
      HYGIENE_RSS_CEILING_BYTES: String(1024 * 1024),
      HYGIENE_DRAIN_TIMEOUT_MS: "5000",
      HYGIENE_REQUEST_TIMEOUT_MS: "4000",
      HYGIENE_LOAD_MONITOR: "off",
    });
    try {
      const listening = JSON.parse(await child.waitForLine(/"listening"/));
      const base = `http://127.0.0.1:${listening.port}`;
      const shed = await fetch(`${base}/`);
      assert.equal(shed.status, 503);
      assert.ok(shed.headers.get("retry-after"));
      await shed.text();
      const live = await fetch(`${base}/healthz`);
      assert.equal(live.status, 200);
      assert.equal(await live.text(), "ok\n");
      const ready = await fetch(`${base}/readyz`);
      assert.equal(ready.status, 503, "readiness answers for itself: not ready while memory sheds");
      await ready.text();
      const metrics = await fetch(`${base}/metrics`);
      assert.equal(metrics.status, 200);
      const samples = parsePromText(await metrics.text()).samples;
      assert.ok(samples.some((s) => s.name === "serve_hygiene_memory_shedding" && s.value === 1));
      assert.ok(samples.some((s) => s.name === "serve_hygiene_denials_total" && s.labels.layer === "memory" && s.value >= 1));
      child.kill("SIGTERM");
      assert.equal(JSON.parse(await child.waitForLine(/"drained"/)).outcome, "clean");
      assert.equal(await child.exited, 0);
    } finally {
      child.kill();
    }
  });

  test(`edge server: SIGTERM with 20 open /events streams → each stream ends whole, the drain is clean, exit 0, and no MaxListenersExceededWarning (${runtime})`, { timeout: 40_000 }, async () => {
    const child = startChild("examples/edge-server.ts", {
      PORT: "0",
      HOST: "127.0.0.1",
      HYGIENE_DRAIN_TIMEOUT_MS: "8000",
      HYGIENE_REQUEST_TIMEOUT_MS: "4000",
      HYGIENE_LOAD_MONITOR: "off",
    });
    const socks: Sock[] = [];
    try {
      const listening = JSON.parse(await child.waitForLine(/"listening"/));
      // Ticks every 20 ms, far more than the drain window lasts: only the shutdown can end them.
      for (let i = 0; i < 20; i++) {
        const sock = await openSock(listening.port);
        sock.write("GET /events?count=1000&every=20 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
        socks.push(sock);
      }
      // Each stream has ticked past 11 (a listener leak per tick would have shown by then).
      await within((async () => {
        while (!socks.every((s) => s.received().includes("data: tick 12"))) await new Promise((r) => setTimeout(r, 20));
      })(), "every stream ticking");
      child.kill("SIGTERM");
      const drained = JSON.parse(await within(child.waitForLine(/"drained"/), "the drained line"));
      assert.equal(drained.outcome, "clean");
      assert.equal(await within(child.exited, "the exit"), 0);
      for (const [i, sock] of socks.entries()) {
        await within(sock.closed, `stream ${i} closing`);
        const res = parseResponse(sock.received(), true);
        assert.equal(res?.status, 200);
        assert.equal(res!.complete, true, `stream ${i} ended whole`);
        assert.match(res!.body, /event: shutdown/);
      }
      assert.doesNotMatch(child.stderr(), /MaxListenersExceeded/);
    } finally {
      for (const s of socks) s.destroy();
      child.kill();
    }
  });

  /** The example on a free port with these variables (the load monitor off): the child and its port once it listens. */
  const listening = async (env: Record<string, string>) => {
    const child = startChild("examples/edge-server.ts", { PORT: "0", HOST: "127.0.0.1", HYGIENE_LOAD_MONITOR: "off", ...env });
    const line = child.waitForLine(/"listening"/).then((l) => JSON.parse(l).port as number);
    return { child, port: line };
  };

  test(`edge server: a client that spent its budget from the probes' address, or a flood of /metrics or /healthz from it, does not make the probes fail: they are not metered, /metrics is under a key of its own (${runtime})`, async () => {
    const { child, port: listened } = await listening({ HYGIENE_RATE_LIMIT: "3" });
    try {
      const port = await listened;
      const status = async (path: string) => {
        const res = await fetch(`http://127.0.0.1:${port}${path}`);
        await res.body?.cancel();
        return res.status;
      };
      const spent: number[] = [];
      for (let i = 0; i < 4; i++) spent.push(await status("/"));
      assert.deepEqual(spent, [200, 200, 200, 429]);
      assert.deepEqual([await status("/healthz"), await status("/readyz"), await status("/metrics?x=1")], [200, 200, 200]);
      // /metrics is metered in a budget of its own (the one above spent 1 of 3)...
      const scrapes: number[] = [];
      for (let i = 0; i < 3; i++) scrapes.push(await status("/metrics"));
      assert.deepEqual(scrapes, [200, 200, 429]);
      // ...and the health probes not at all: a flood of them from that address changes nothing.
      const probes: number[] = [];
      for (let i = 0; i < 8; i++) probes.push(await status(i % 2 === 0 ? "/healthz" : "/readyz?x=1"));
      assert.deepEqual(probes, [200, 200, 200, 200, 200, 200, 200, 200]);
      assert.equal(await status("/"), 429, "the client's own budget is still spent");
      child.kill("SIGTERM");
      assert.equal(await child.exited, 0);
    } finally {
      child.kill();
    }
  });

  test(`edge server: a forced drain answers the request still running 503 before the process exits 3 (${runtime})`, async () => {
    const { child, port: listened } = await listening({ HYGIENE_REQUEST_TIMEOUT_MS: "Infinity", HYGIENE_DRAIN_TIMEOUT_MS: "1500" });
    try {
      const port = await listened;
      const stuck = fetch(`http://127.0.0.1:${port}/work?ms=8000`).then(async (res) => ({ status: res.status, body: await res.text() }), (error: unknown) => ({ error: String(error) }));
      // Admitted and running (the in-flight gauge says so) before the signal.
      await within((async () => {
        for (;;) {
          const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
          if (/^serve_hygiene_requests_in_flight [1-9]/m.test(text)) return;
          await new Promise((r) => setTimeout(r, 20));
        }
      })(), "the request running");
      child.kill("SIGTERM");
      assert.deepEqual((await stuck as { status?: number }).status, 503, JSON.stringify(await stuck));
      assert.equal(await child.exited, 3);
    } finally {
      child.kill();
    }
  });

  test(`edge server: a stop signal during startup (the shared store still connecting) ends it with exit 0, not the signal's default (ignored as a container's PID 1) (${runtime})`, async () => {
    // A port nothing listens on: the connect is retried until its 5 s bound.
    const closed = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, "127.0.0.1", () => {
        const { port } = probe.address() as { port: number };
        probe.close(() => resolve(port));
      });
    });
    const child = startChild("examples/edge-server.ts", { PORT: "0", HOST: "127.0.0.1", HYGIENE_REDIS_URL: `redis://127.0.0.1:${closed}` });
    try {
      await child.waitForLine(/"connecting to the shared store"/);
      child.kill("SIGTERM");
      assert.equal(await child.exited, 0);
    } finally {
      child.kill();
    }
  });

  // The stop is installed before the rest of the example is loaded (up to ~1 s on Node): a
  // SIGTERM while the modules loaded was the signal's default, ignored as a container's PID 1.
  // Deno runs a signal listener only once its loop turns, which the load may outlast: the signal
  // then reaches serve()'s own handling as it starts, and the server drains at once.
  test(`edge server: a stop signal as soon as it says "starting" (its modules still to load) ends it with exit 0 (${runtime})`, async () => {
    const child = startChild("examples/edge-server.ts", { PORT: "0", HOST: "127.0.0.1" });
    try {
      await child.waitForLine(/"msg":"starting"/);
      child.kill("SIGTERM");
      assert.equal(await child.exited, 0);
      if (/"msg":"listening"/.test(child.stdout())) assert.match(child.stdout(), /"msg":"drained".*"outcome":"clean"/);
    } finally {
      child.kill();
    }
    // What makes "starting" early: the entry loads nothing before it but the stop itself, which
    // imports nothing; the rest comes by a dynamic import after.
    const imports = (file: string) => [...readFileSync(new URL(`../../${file}`, import.meta.url), "utf8").matchAll(/^import .* from "([^"]+)";$/gm)].map((m) => m[1]);
    assert.deepEqual(imports("examples/edge-server.ts"), ["./edge/startup.ts"]);
    assert.deepEqual(imports("examples/edge/startup.ts"), []);
    // And it goes only once serve() has installed its own (removed first, Node lost a signal it
    // had caught but not yet delivered).
    const main = readFileSync(new URL("../../examples/edge/main.ts", import.meta.url), "utf8");
    assert.ok(main.indexOf("adapter.serve(") < main.indexOf("endStartup();"), "endStartup() after serve() is called");
  });

  test(`edge server: an invalid variable stops startup with a message naming it (${runtime})`, async () => {
    const child = startChild("examples/edge-server.ts", { PORT: "0", HYGIENE_CONCURRENCY_LIMIT: "0" });
    try {
      assert.equal(await child.exited, 2);
      assert.match(child.stderr() + child.stdout(), /HYGIENE_CONCURRENCY_LIMIT must be an integer of at least 1/);
    } finally {
      child.kill();
    }
  });

  // Each combination the library would refuse at startup, as the environment spells it.
  const BAD_COMBINATIONS: [Record<string, string>, string[]][] = [
    [{ HYGIENE_REQUEST_TIMEOUT_MS: "5000", HYGIENE_DRAIN_TIMEOUT_MS: "5000" }, ["HYGIENE_REQUEST_TIMEOUT_MS", "HYGIENE_DRAIN_TIMEOUT_MS"]],
    // The request timeout left at its default (20 s) against a shorter drain window.
    [{ HYGIENE_DRAIN_TIMEOUT_MS: "10000" }, ["HYGIENE_REQUEST_TIMEOUT_MS", "HYGIENE_DRAIN_TIMEOUT_MS"]],
    [{ HYGIENE_REQUEST_TIMEOUT_MS: "1000", HYGIENE_DRAIN_TIMEOUT_MS: "5000", HYGIENE_PRESTOP_DELAY_MS: "5000" }, ["HYGIENE_PRESTOP_DELAY_MS", "HYGIENE_DRAIN_TIMEOUT_MS"]],
    // Requests are still admitted during the pre-stop delay: delay + request timeout must fit too.
    [{ HYGIENE_REQUEST_TIMEOUT_MS: "3000", HYGIENE_DRAIN_TIMEOUT_MS: "5000", HYGIENE_PRESTOP_DELAY_MS: "2000" }, ["HYGIENE_DRAIN_TIMEOUT_MS", "HYGIENE_PRESTOP_DELAY_MS", "HYGIENE_REQUEST_TIMEOUT_MS"]],
    [{ HYGIENE_REQUEST_TIMEOUT_MS: "Infinity", HYGIENE_DRAIN_TIMEOUT_MS: "2147483648" }, ["HYGIENE_DRAIN_TIMEOUT_MS"]],
    [{ HYGIENE_RATE_WINDOW_MS: "2147483648" }, ["HYGIENE_RATE_WINDOW_MS"]],
  ];

  test(`edge server: every invalid combination of variables exits 2 with a message naming the variables involved (${runtime})`, async () => {
    const children = BAD_COMBINATIONS.map(([env]) => startChild("examples/edge-server.ts", { PORT: "0", HYGIENE_LOAD_MONITOR: "off", ...env }));
    try {
      for (const [i, child] of children.entries()) {
        const [env, names] = BAD_COMBINATIONS[i]!;
        const code = await child.exited;
        const said = child.stderr() + child.stdout();
        assert.equal(code, 2, `${JSON.stringify(env)} exited ${code}:\n${said}`);
        for (const name of names) assert.ok(said.includes(name), `${JSON.stringify(env)}: the message does not name ${name}:\n${said}`);
        assert.doesNotMatch(said, /"(requestTimeoutMs|drainTimeoutMs|preStopDelayMs|windowMs)"/, "the message speaks of the variables, not the library's fields");
      }
    } finally {
      for (const child of children) child.kill();
    }
  });

  test(`edge server: a port already in use stops startup with exit 1 and one JSON line (${runtime})`, async () => {
    const { createServer } = await import("node:net");
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, "127.0.0.1", resolve));
    const port = (holder.address() as { port: number }).port;
    const child = startChild("examples/edge-server.ts", { PORT: String(port), HOST: "127.0.0.1", HYGIENE_LOAD_MONITOR: "off" });
    try {
      assert.equal(await child.exited, 1);
      const lines = (child.stderr() + child.stdout()).trim().split("\n").filter((l) => l.includes("listen failed"));
      assert.equal(lines.length, 1, child.stderr() + child.stdout());
      assert.equal(JSON.parse(lines[0]!).msg, "listen failed");
      assert.doesNotMatch(child.stderr(), /\n\s+at /, "no stack trace");
    } finally {
      child.kill();
      await new Promise((resolve) => holder.close(resolve));
    }
  });

  test("edge server config: a combination the library would refuse is a ConfigError naming every variable involved", () => {
    for (const [env, names] of BAD_COMBINATIONS) {
      assert.throws(() => readEdgeConfig(env), (e: unknown) => e instanceof ConfigError && names.every((n) => e.variables.includes(n) && e.message.includes(n)), JSON.stringify(env));
    }
    assert.equal(readEdgeConfig({ HYGIENE_REQUEST_TIMEOUT_MS: "Infinity", HYGIENE_DRAIN_TIMEOUT_MS: "2147483647" }).drainTimeoutMs, 2 ** 31 - 1);
    // What the library itself refuses at startup is retold in the variables' names.
    const retold = configErrorFrom(new RangeError('Cannot validate lifecycle as "requestTimeoutMs" must be below "drainTimeoutMs": current values are 5 and 5'));
    assert.deepEqual(retold?.variables, ["HYGIENE_REQUEST_TIMEOUT_MS", "HYGIENE_DRAIN_TIMEOUT_MS"]);
    assert.match(retold!.message, /"?HYGIENE_REQUEST_TIMEOUT_MS"? must be below "?HYGIENE_DRAIN_TIMEOUT_MS/);
    assert.equal(configErrorFrom(new Error("boom")), undefined);
  });

  test("edge server config: defaults, Infinity, proxies, and every rejection names its variable", () => {
    const c = readEdgeConfig({});
    assert.equal(c.port, 8000);
    assert.equal(c.requestTimeoutMs, 20_000);
    assert.equal(c.drainTimeoutMs, 25_000);
    assert.deepEqual(c.trustedProxies, []);
    assert.equal(c.concurrencyLimit, undefined, "unset: the library's adaptive limit");
    assert.equal(readEdgeConfig({ HYGIENE_CONCURRENCY_LIMIT: "64" }).concurrencyLimit, 64);
    const d = readEdgeConfig({ HYGIENE_CONCURRENCY_LIMIT: "Infinity", HYGIENE_TRUSTED_PROXIES: "10.0.0.0/8, 192.168.0.0/16" });
    assert.equal(d.concurrencyLimit, Infinity);
    assert.deepEqual(d.trustedProxies, ["10.0.0.0/8", "192.168.0.0/16"]);
    // Those node-redis takes (a stray % or a path that is no number made it throw at startup: the deploy review).
    for (const url of ["redis://127.0.0.1:6379", "redis://h:6379/", "redis://h:6379/2", "rediss://:p%40ss@h:6380/0"]) assert.equal(readEdgeConfig({ HYGIENE_REDIS_URL: url }).redisUrl, url);
    for (const [name, value] of [["PORT", "70000"], ["PORT", "-1"], ["HYGIENE_RATE_LIMIT", "ten"], ["HYGIENE_DRAIN_TIMEOUT_MS", "1.5"], ["HYGIENE_RSS_CEILING_BYTES", "0"], ["HYGIENE_LOAD_MONITOR", "yes"], ["HYGIENE_REDIS_URL", "redis://127.0.0.1:6379/abc"], ["HYGIENE_REDIS_URL", "redis://127.0.0.1:6379/0/1"], ["HYGIENE_REDIS_URL", "redis://user:s3cr%t@127.0.0.1:6379"], ["HYGIENE_REDIS_URL", "http://127.0.0.1:6379"]]) {
      assert.throws(() => readEdgeConfig({ [name!]: value }), (e: unknown) => e instanceof ConfigError && e.variable === name, `${name}=${value}`);
    }
  });
});
