import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { runtime, startChild } from "../support/runtime.ts";
import { parsePromText } from "../support/prom_text.ts";
import { ConfigError, readEdgeConfig } from "../../examples/edge/config.ts";

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

  test(`edge server: an invalid variable stops startup with a message naming it (${runtime})`, async () => {
    const child = startChild("examples/edge-server.ts", { PORT: "0", HYGIENE_CONCURRENCY_LIMIT: "0" });
    try {
      assert.equal(await child.exited, 2);
      assert.match(child.stderr() + child.stdout(), /HYGIENE_CONCURRENCY_LIMIT must be an integer of at least 1/);
    } finally {
      child.kill();
    }
  });

  test("edge server config: defaults, Infinity, proxies, and every rejection names its variable", () => {
    const c = readEdgeConfig({});
    assert.equal(c.port, 8000);
    assert.equal(c.requestTimeoutMs, 20_000);
    assert.equal(c.drainTimeoutMs, 25_000);
    assert.deepEqual(c.trustedProxies, []);
    const d = readEdgeConfig({ HYGIENE_CONCURRENCY_LIMIT: "Infinity", HYGIENE_TRUSTED_PROXIES: "10.0.0.0/8, 192.168.0.0/16" });
    assert.equal(d.concurrencyLimit, Infinity);
    assert.deepEqual(d.trustedProxies, ["10.0.0.0/8", "192.168.0.0/16"]);
    for (const [name, value] of [["PORT", "70000"], ["PORT", "-1"], ["HYGIENE_RATE_LIMIT", "ten"], ["HYGIENE_DRAIN_TIMEOUT_MS", "1.5"], ["HYGIENE_RSS_CEILING_BYTES", "0"], ["HYGIENE_LOAD_MONITOR", "yes"]]) {
      assert.throws(() => readEdgeConfig({ [name!]: value }), (e: unknown) => e instanceof ConfigError && e.variable === name, `${name}=${value}`);
    }
  });
});
