import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { Counter, Registry, type RegistryContentType } from "prom-client";
import { createPrometheusExporter, type PrometheusExporterOptions } from "../../src/prometheus/exporter.ts";
import { createGuard, type GuardOptions } from "../../src/core/guard.ts";
import { createManualClock } from "../../src/testing/manual_clock.ts";
import { createFixedWindowLimiter } from "../../src/core/limits/fixed_window.ts";
import { createScopedLimiter } from "../../src/core/limits/scopes.ts";
import { createRateStore } from "../../src/core/limits/rate_store.ts";
import { clientKey } from "../../src/core/limits/client_key.ts";
import { createFakeHost, type FakeHost } from "../support/fake_host.ts";
import { flushMicrotasks } from "../support/flush.ts";
import { parsePromText, samplesOf, valueOf } from "../support/prom_text.ts";
import { createTurnClock } from "../support/turn_clock.ts";

const GET = (path = "/", headers?: HeadersInit) => new Request(`http://localhost${path}`, headers === undefined ? {} : { headers });

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((res) => (resolve = res));
  return { promise, resolve };
}

function setup(guardOptions: GuardOptions = {}, exporterOptions?: PrometheusExporterOptions, fake?: FakeHost) {
  const clock = fake?.clock ?? createManualClock();
  const metrics = createPrometheusExporter(exporterOptions);
  const guard = createGuard({ clock, onEvent: metrics.onEvent, onError: () => {}, ...guardOptions }, fake?.host);
  metrics.observeGuard(guard);
  const scrape = async () => parsePromText(await metrics.render());
  return { clock, metrics, guard, scrape };
}

describe("prometheus exporter: families", () => {
  test("prometheus exporter: every family is registered with its Prometheus type and the default prefix", async () => {
    const { scrape, guard } = setup();
    const { types } = await scrape();
    const want: Record<string, string> = {
      requests_in_flight: "gauge",
      denials_total: "counter",
      rate_limit_denials_total: "counter",
      request_duration_seconds: "histogram",
      stragglers: "gauge",
      concurrency_limit: "gauge",
      queue_waiting: "gauge",
      turn_waiting: "gauge",
      limiter_keys: "gauge",
      limiter_keys_capacity: "gauge",
      resident_memory_bytes: "gauge",
      memory_shedding: "gauge",
      event_loop_delay_seconds: "gauge",
      event_loop_busy: "gauge",
      admit_share: "gauge",
      drains_total: "counter",
      faults_total: "counter",
      store_transitions_total: "counter",
      store_fallback: "gauge",
    };
    assert.deepEqual(Object.fromEntries(types), Object.fromEntries(Object.entries(want).map(([k, v]) => [`serve_hygiene_${k}`, v])));
    guard.dispose();
  });

  test("prometheus exporter: known label sets start at zero so the first increment is visible to rate()", async () => {
    const text = parsePromText(await createPrometheusExporter().render());
    for (const outcome of ["ok", "error", "timeout", "aborted"]) {
      assert.equal(valueOf(text, "serve_hygiene_request_duration_seconds_count", { outcome }), 0);
    }
    assert.equal(valueOf(text, "serve_hygiene_drains_total", { outcome: "clean" }), 0);
    assert.equal(valueOf(text, "serve_hygiene_drains_total", { outcome: "forced" }), 0);
  });

  test("prometheus exporter: before a guard is observed its gauges report no sample rather than a false 0", async () => {
    const text = parsePromText(await createPrometheusExporter().render());
    for (const name of ["requests_in_flight", "stragglers", "concurrency_limit", "queue_waiting", "turn_waiting", "resident_memory_bytes", "memory_shedding", "event_loop_busy"]) {
      assert.deepEqual(samplesOf(text, `serve_hygiene_${name}`), [], name);
    }
  });

  test("prometheus exporter: the prefix and a shared registry are honoured, and render() returns the host's metrics too", async () => {
    const registry = new Registry();
    new Counter({ name: "host_hits_total", help: "the host's own", registers: [registry] }).inc(3);
    const metrics = createPrometheusExporter({ registry, prefix: "edge_" });
    assert.equal(metrics.registry, registry);
    assert.equal(metrics.contentType, registry.contentType);
    const text = parsePromText(await metrics.render());
    assert.equal(valueOf(text, "host_hits_total"), 3);
    assert.ok(text.types.has("edge_denials_total"));
    assert.ok(![...text.types.keys()].some((name) => name.startsWith("serve_hygiene_")));
  });

  // A review: read once at creation, it said plain text after the host switched its registry to
  // OpenMetrics, so a /metrics route labelled OpenMetrics text (`# EOF`) as text/plain.
  test("prometheus exporter: contentType follows the registry's, set after the exporter was made", async () => {
    const registry = new Registry<RegistryContentType>();
    const metrics = createPrometheusExporter({ registry: registry as Registry });
    registry.setContentType(Registry.OPENMETRICS_CONTENT_TYPE);
    assert.equal(metrics.contentType, Registry.OPENMETRICS_CONTENT_TYPE);
    assert.match(await metrics.render(), /# EOF\n$/);
  });
});

describe("prometheus exporter: events", () => {
  test("prometheus exporter: two concurrency sheds are counted by layer and reason", async () => {
    const { guard, scrape } = setup({ concurrencyLimit: 1, shedWaitMs: 0 });
    const gate = deferred();
    const fetch = guard.wrap(async () => (await gate.promise, new Response("ok")));
    const held = fetch(GET());
    await flushMicrotasks();
    assert.equal((await fetch(GET())).status, 503);
    assert.equal((await fetch(GET())).status, 503);
    const text = await scrape();
    assert.equal(valueOf(text, "serve_hygiene_denials_total", { layer: "concurrency", reason: "shed" }), 2);
    assert.equal(samplesOf(text, "serve_hygiene_denials_total").length, 1);
    gate.resolve();
    await held;
  });

  test("prometheus exporter: the duration histogram counts every request by outcome, in seconds", async () => {
    const { guard, clock, scrape } = setup({ requestTimeoutMs: 1_000, drainTimeoutMs: 5_000 });
    const slow = deferred();
    const ok = guard.wrap(async () => (await slow.promise, new Response("ok")));
    const pending = [ok(GET()), ok(GET()), ok(GET())];
    await flushMicrotasks();
    clock.advance(250);
    slow.resolve();
    for (const res of await Promise.all(pending)) assert.equal(res.status, 200);
    assert.equal((await guard.wrap(() => Promise.reject(new Error("boom")))(GET())).status, 500);
    const stuck = deferred();
    const straggler = guard.wrap(async () => (await stuck.promise, new Response("late")))(GET());
    await flushMicrotasks();
    clock.advance(1_000);
    assert.equal((await straggler).status, 408);
    stuck.resolve();
    await flushMicrotasks();

    const text = await scrape();
    const count = (outcome: string) => valueOf(text, "serve_hygiene_request_duration_seconds_count", { outcome });
    assert.deepEqual([count("ok"), count("error"), count("timeout")], [3, 1, 1]);
    assert.equal(valueOf(text, "serve_hygiene_request_duration_seconds_sum", { outcome: "ok" }), 0.75);
    assert.equal(valueOf(text, "serve_hygiene_request_duration_seconds_bucket", { outcome: "ok", le: "0.1" }), 0);
    assert.equal(valueOf(text, "serve_hygiene_request_duration_seconds_bucket", { outcome: "ok", le: "0.25" }), 3);
    assert.equal(valueOf(text, "serve_hygiene_request_duration_seconds_bucket", { outcome: "ok", le: "+Inf" }), 3);
    assert.ok((valueOf(text, "serve_hygiene_request_duration_seconds_sum", { outcome: "timeout" }) ?? 0) >= 1);
    assert.equal(valueOf(text, "serve_hygiene_denials_total", { layer: "timeout", reason: "deadline" }), 1);
  });

  test("prometheus exporter: custom duration buckets are used", async () => {
    const { guard, scrape } = setup({}, { durationBuckets: [0.5, 2] });
    await guard.wrap(() => new Response("ok"))(GET());
    const les = samplesOf(await scrape(), "serve_hygiene_request_duration_seconds_bucket")
      .filter((s) => s.labels.outcome === "ok")
      .map((s) => s.labels.le);
    assert.deepEqual(les, ["0.5", "2", "+Inf"]);
  });

  test("prometheus exporter: a rate denial counts by class and scope; absent ones are the empty label", async () => {
    const clock = createManualClock();
    const metrics = createPrometheusExporter();
    const onEvent = metrics.onEvent;
    const unnamed = createFixedWindowLimiter({ limit: 1, clock, onEvent });
    unnamed.take("k");
    unnamed.take("k");
    const scoped = createScopedLimiter<{ tenant: string }>({
      scopes: [
        { name: "global", limiter: createFixedWindowLimiter({ limit: 100, clock, name: "global" }) },
        { name: "tenant", limiter: createFixedWindowLimiter({ limit: 1, clock, name: "tenant" }), key: (c) => c.tenant },
      ],
      onEvent,
    });
    scoped.take({ tenant: "a" });
    scoped.take({ tenant: "a" });
    scoped.take({ tenant: "a" });
    const text = parsePromText(await metrics.render());
    assert.equal(valueOf(text, "serve_hygiene_rate_limit_denials_total", { class: "", scope: "" }), 1);
    assert.equal(valueOf(text, "serve_hygiene_rate_limit_denials_total", { class: "tenant", scope: "tenant" }), 2);
    assert.equal(valueOf(text, "serve_hygiene_denials_total", { layer: "rate", reason: "over-limit" }), 3);
  });

  test("prometheus exporter: a limiter failing closed counts a fault and a limiter-error denial", async () => {
    const metrics = createPrometheusExporter();
    const limiter = createFixedWindowLimiter({ name: "ip", onEvent: metrics.onEvent, clock: createManualClock() });
    assert.equal(limiter.take("k", 1, NaN).allowed, false);
    const text = parsePromText(await metrics.render());
    assert.equal(valueOf(text, "serve_hygiene_faults_total", { source: "rate-limiter", failed: "closed" }), 1);
    assert.equal(valueOf(text, "serve_hygiene_denials_total", { layer: "rate", reason: "limiter-error" }), 1);
  });

  test("prometheus exporter: a shared store's fallback and recovery are counted, and the fallback gauge follows them", async () => {
    const metrics = createPrometheusExporter();
    const clock = createManualClock();
    let fail = true;
    const store = createRateStore(
      { take: async (checks) => (fail ? Promise.reject(new Error("down")) : { now: 0, results: checks.map(() => ({ allowed: true, retryAfterMs: 0, remaining: 1, resetMs: 1 })) }) },
      { name: "redis", clock, fallbackAfter: 2, probeIntervalMs: 100, onEvent: metrics.onEvent },
    );
    const limiter = createFixedWindowLimiter({ name: "ip", limit: 2, clock, store, onEvent: metrics.onEvent });
    await limiter.take("k");
    await limiter.take("k");
    let text = parsePromText(await metrics.render());
    assert.equal(valueOf(text, "serve_hygiene_store_transitions_total", { store: "redis", state: "fallback" }), 1);
    assert.equal(valueOf(text, "serve_hygiene_store_fallback", { store: "redis" }), 1);
    assert.equal(valueOf(text, "serve_hygiene_faults_total", { source: "rate-store", failed: "closed" }), 1);
    fail = false;
    clock.advance(100);
    await limiter.take("k");
    text = parsePromText(await metrics.render());
    assert.equal(valueOf(text, "serve_hygiene_store_transitions_total", { store: "redis", state: "recovered" }), 1);
    assert.equal(valueOf(text, "serve_hygiene_store_fallback", { store: "redis" }), 0);
  });

  test("prometheus exporter: onEvent never throws, and a malformed event is not counted", async () => {
    const metrics = createPrometheusExporter();
    const bad = [
      null,
      { type: "request", outcome: "ok", durationMs: NaN, status: 200 },
      { type: "request", outcome: "ok", durationMs: -5, status: 200 },
      { type: "request", outcome: "weird", durationMs: 5, status: 200 },
      { type: "fault", source: "x", failed: "sideways", error: null },
    ];
    for (const event of bad) metrics.onEvent(event as never);
    const text = parsePromText(await metrics.render());
    assert.equal(valueOf(text, "serve_hygiene_request_duration_seconds_count", { outcome: "ok" }), 0);
    assert.deepEqual(samplesOf(text, "serve_hygiene_faults_total"), []);
  });

  test("prometheus exporter: label values from configuration are capped, the overflow counted under _other", async () => {
    const metrics = createPrometheusExporter();
    for (let i = 0; i < 100; i++) {
      metrics.onEvent({ type: "deny", layer: "rate", reason: "over-limit", status: 429, limiterClass: "ip", scope: `s${i}` });
    }
    const series = samplesOf(parsePromText(await metrics.render()), "serve_hygiene_rate_limit_denials_total");
    assert.equal(series.length, 65);
    assert.equal(series.find((s) => s.labels.scope === "_other")?.value, 36);
  });

  test("prometheus exporter: recordDrain counts outcomes and refuses anything else", async () => {
    const metrics = createPrometheusExporter();
    metrics.recordDrain({ outcome: "forced" });
    metrics.recordDrain({ outcome: "clean" });
    metrics.recordDrain({ outcome: "clean" });
    assert.throws(() => metrics.recordDrain({ outcome: "nope" } as never), TypeError);
    const text = parsePromText(await metrics.render());
    assert.equal(valueOf(text, "serve_hygiene_drains_total", { outcome: "clean" }), 2);
    assert.equal(valueOf(text, "serve_hygiene_drains_total", { outcome: "forced" }), 1);
  });
});

describe("prometheus exporter: no client data in labels", () => {
  test("prometheus exporter: addresses fed in requests never appear in the exposition text", async () => {
    const addresses = ["203.0.113.7", "2001:db8::1", "198.51.100.9"];
    const clock = createManualClock();
    const metrics = createPrometheusExporter();
    const limiter = createFixedWindowLimiter({ limit: 1, clock, name: "ip", onEvent: metrics.onEvent });
    metrics.observeLimiter("ip", limiter.size);
    const guard = createGuard({ clock, concurrencyLimit: 64, onEvent: metrics.onEvent });
    metrics.observeGuard(guard);
    const fetch = guard.wrap((request, info) => {
      const key = clientKey(request, { peer: info.peer }, { trustedProxies: ["10.0.0.0/8"] });
      return new Response(null, { status: limiter.take(key).allowed ? 200 : 429 });
    });
    const statuses: number[] = [];
    for (const address of addresses.slice(0, 2)) {
      for (let i = 0; i < 3; i++) statuses.push((await fetch(GET("/", { "x-forwarded-for": "1.1.1.1" }), { peer: { address } })).status);
    }
    for (let i = 0; i < 3; i++) {
      statuses.push((await fetch(GET("/", { "x-forwarded-for": addresses[2]! }), { peer: { address: "10.0.0.2" } })).status);
    }
    assert.deepEqual(statuses, [200, 429, 429, 200, 429, 429, 200, 429, 429]);

    const raw = await metrics.render();
    for (const address of [...addresses, "10.0.0.2", "1.1.1.1", "2001:db8::"]) assert.ok(!raw.includes(address), address);
    const text = parsePromText(raw);
    assert.equal(valueOf(text, "serve_hygiene_rate_limit_denials_total", { class: "ip", scope: "" }), 6);
    assert.equal(valueOf(text, "serve_hygiene_limiter_keys", { class: "ip" }), 3);
    const allowed = new Set(["class", "failed", "layer", "le", "outcome", "reason", "scope", "source"]);
    for (const sample of text.samples) {
      for (const name of Object.keys(sample.labels)) assert.ok(allowed.has(name), `${sample.name}: ${name}`);
    }
    guard.dispose();
  });
});

describe("prometheus exporter: live gauges", () => {
  test("prometheus exporter: the concurrency limit and the admission queue are read at scrape time (the adaptive limit moves)", async () => {
    const { guard, scrape } = setup({ concurrencyLimit: { windowSamples: 1, windowMs: 1 } });
    const gate = deferred();
    const fetch = guard.wrap(async () => (await gate.promise, new Response("ok")));
    const text = await scrape();
    assert.equal(valueOf(text, "serve_hygiene_concurrency_limit"), 1, "the adaptive limit starts at its floor");
    const pending = [fetch(GET()), fetch(GET()), fetch(GET())];
    await flushMicrotasks();
    assert.equal(valueOf(await scrape(), "serve_hygiene_queue_waiting"), 2);
    gate.resolve();
    await Promise.all(pending);
    assert.equal(valueOf(await scrape(), "serve_hygiene_queue_waiting"), 0);
    const fixed = setup({ concurrencyLimit: 64 });
    assert.equal(valueOf(await fixed.scrape(), "serve_hygiene_concurrency_limit"), 64);
    guard.dispose();
    fixed.guard.dispose();
  });

  test("prometheus exporter: requests waiting at the load monitor for a later turn are read at scrape time", async () => {
    const clock = createTurnClock();
    const metrics = createPrometheusExporter();
    const guard = createGuard({ clock, loadMonitor: { maxBatchMs: 20, minAdmitShare: 1, highWatermarkMs: 600_000 }, onError: () => {} });
    metrics.observeGuard(guard);
    const fetch = guard.wrap(() => ((clock.t += 30), new Response("ok")));
    const scrape = async () => parsePromText(await metrics.render());
    assert.equal(valueOf(await scrape(), "serve_hygiene_turn_waiting"), 0);
    const all = [fetch(GET()), fetch(GET()), fetch(GET()), fetch(GET())]; // the first starts the probe, the second fills the batch
    assert.equal(valueOf(await scrape(), "serve_hygiene_turn_waiting"), 2);
    clock.runImmediates();
    await flushMicrotasks();
    clock.runImmediates();
    await Promise.all(all);
    assert.equal(valueOf(await scrape(), "serve_hygiene_turn_waiting"), 0);
    guard.dispose();
  });

  test("prometheus exporter: the in-flight gauge reads the guard at scrape time", async () => {
    const { guard, scrape } = setup({ concurrencyLimit: 8, shedWaitMs: 0 });
    const gate = deferred();
    const fetch = guard.wrap(async () => (await gate.promise, new Response("ok")));
    assert.equal(valueOf(await scrape(), "serve_hygiene_requests_in_flight"), 0);
    const pending = [fetch(GET()), fetch(GET()), fetch(GET())];
    await flushMicrotasks();
    assert.equal(valueOf(await scrape(), "serve_hygiene_requests_in_flight"), 3);
    gate.resolve();
    await Promise.all(pending);
    assert.equal(valueOf(await scrape(), "serve_hygiene_requests_in_flight"), 0);
  });

  test("prometheus exporter: a straggler past its 408 is counted until its handler settles", async () => {
    const { guard, clock, scrape } = setup({ requestTimeoutMs: 100, drainTimeoutMs: 1_000 });
    const stuck = deferred();
    const res = guard.wrap(async () => (await stuck.promise, new Response("late")))(GET());
    await flushMicrotasks();
    clock.advance(100);
    assert.equal((await res).status, 408);
    let text = await scrape();
    assert.equal(valueOf(text, "serve_hygiene_stragglers"), 1);
    assert.equal(valueOf(text, "serve_hygiene_requests_in_flight"), 1);
    stuck.resolve();
    await flushMicrotasks();
    text = await scrape();
    assert.equal(valueOf(text, "serve_hygiene_stragglers"), 0);
    assert.equal(valueOf(text, "serve_hygiene_requests_in_flight"), 0);
  });

  test("prometheus exporter: limiter key gauges read each observed limiter's table live", async () => {
    const clock = createManualClock();
    const metrics = createPrometheusExporter();
    const ip = createFixedWindowLimiter({ name: "ip", maxKeys: 10, clock });
    const auth = createFixedWindowLimiter({ name: "auth", clock });
    metrics.observeLimiter("ip", ip.size);
    metrics.observeLimiter("auth", auth.size);
    ip.take("a");
    ip.take("b");
    let text = parsePromText(await metrics.render());
    assert.equal(valueOf(text, "serve_hygiene_limiter_keys", { class: "ip" }), 2);
    assert.equal(valueOf(text, "serve_hygiene_limiter_keys", { class: "auth" }), 0);
    assert.equal(valueOf(text, "serve_hygiene_limiter_keys_capacity", { class: "ip" }), 10);
    assert.equal(valueOf(text, "serve_hygiene_limiter_keys_capacity", { class: "auth" }), 4096);
    auth.take("c");
    text = parsePromText(await metrics.render());
    assert.equal(valueOf(text, "serve_hygiene_limiter_keys", { class: "auth" }), 1);
    assert.throws(() => metrics.observeLimiter("", ip.size), /"limiterClass" must be a non-empty string/);
    assert.throws(() => metrics.observeLimiter("ip", null as never), TypeError);
  });

  test("prometheus exporter: resident memory is absent while unknown, then reported with the shedding flag", async () => {
    const fake = createFakeHost();
    const { scrape, guard } = setup({ memory: { ceilingBytes: 1_000, intervalMs: 1_000 }, loadMonitor: false }, {}, fake);
    let text = await scrape();
    assert.deepEqual(samplesOf(text, "serve_hygiene_resident_memory_bytes"), []);
    assert.equal(valueOf(text, "serve_hygiene_memory_shedding"), 0);
    fake.rss = 1_500;
    fake.clock.advance(1_000);
    text = await scrape();
    assert.equal(valueOf(text, "serve_hygiene_resident_memory_bytes"), 1_500);
    assert.equal(valueOf(text, "serve_hygiene_memory_shedding"), 1);
    fake.rss = NaN;
    fake.clock.advance(1_000);
    text = await scrape();
    assert.deepEqual(samplesOf(text, "serve_hygiene_resident_memory_bytes"), []);
    assert.equal(valueOf(text, "serve_hygiene_memory_shedding"), 0);
    guard.dispose();
  });

  test("prometheus exporter: without a memory ceiling or load monitor those gauges have no sample, shedding reads 0", async () => {
    const { scrape } = setup({ loadMonitor: false });
    const text = await scrape();
    assert.deepEqual(samplesOf(text, "serve_hygiene_resident_memory_bytes"), []);
    assert.equal(valueOf(text, "serve_hygiene_memory_shedding"), 0);
    for (const name of ["event_loop_delay_seconds", "event_loop_busy", "admit_share"]) {
      assert.deepEqual(samplesOf(text, `serve_hygiene_${name}`), [], name);
    }
  });

  test("prometheus exporter: the load gauges follow the monitor: delay in seconds, busy, admitted share", async () => {
    const { guard, scrape } = setup({ loadMonitor: { smoothing: 0.5 } });
    let text = await scrape();
    assert.deepEqual(samplesOf(text, "serve_hygiene_event_loop_delay_seconds"), [], "the probe starts with the first request");
    await guard.wrap(() => new Response("ok"))(new Request("http://localhost/"));
    text = await scrape();
    assert.equal(valueOf(text, "serve_hygiene_event_loop_busy"), 0);
    assert.equal(valueOf(text, "serve_hygiene_admit_share"), 1);
    assert.equal(valueOf(text, "serve_hygiene_event_loop_delay_seconds"), 0);
    guard.load!.record(200);
    text = await scrape();
    assert.equal(valueOf(text, "serve_hygiene_event_loop_busy"), 1);
    assert.equal(valueOf(text, "serve_hygiene_event_loop_delay_seconds"), 0.1);
    assert.equal(valueOf(text, "serve_hygiene_admit_share"), guard.load!.admitShare);
    assert.ok(guard.load!.admitShare < 1);
    guard.dispose();
    text = await scrape();
    assert.equal(valueOf(text, "serve_hygiene_event_loop_busy"), 0);
    assert.equal(valueOf(text, "serve_hygiene_admit_share"), 1);
    assert.deepEqual(samplesOf(text, "serve_hygiene_event_loop_delay_seconds"), []);
  });
});

describe("prometheus exporter: default metrics", () => {
  const processFamilies = (types: ReadonlyMap<string, string>) =>
    [...types.keys()].filter((name) => name.startsWith("process_") || name.startsWith("nodejs_"));

  test("prometheus exporter: prom-client's process metrics are absent by default", async () => {
    const text = parsePromText(await createPrometheusExporter().render());
    assert.deepEqual(processFamilies(text.types), []);
  });

  test("prometheus exporter: defaultMetrics: true registers them, once even on a registry that has them", async () => {
    const registry = new Registry();
    const metrics = createPrometheusExporter({ registry, defaultMetrics: true });
    const text = parsePromText(await metrics.render());
    assert.ok(text.types.has("process_cpu_user_seconds_total"));
    assert.ok(processFamilies(text.types).length > 3);
    assert.doesNotThrow(() => createPrometheusExporter({ registry, prefix: "other_", defaultMetrics: true }));
  });
});

describe("prometheus exporter: options", () => {
  const create = (options: unknown) => () => createPrometheusExporter(options as PrometheusExporterOptions);

  test("prometheus exporter: bad options throw up front, naming the field", () => {
    assert.throws(create("x"), { name: "TypeError", message: /the options must be an object/ });
    assert.throws(create({ prefix: 7 }), {
      name: "TypeError",
      message: 'Cannot create prometheus exporter as "prefix" must be a string: current value is 7',
    });
    assert.throws(create({ prefix: "bad-prefix" }), {
      name: "RangeError",
      message: /^Cannot create prometheus exporter as "prefix" must be .*: current value is "bad-prefix"$/,
    });
    assert.throws(create({ prefix: "a:b_" }), RangeError);
    assert.throws(create({ registry: {} }), { name: "TypeError", message: /"registry" must be a prom-client Registry/ });
    assert.throws(create({ defaultMetrics: "yes" }), { name: "TypeError", message: /"defaultMetrics" must be a boolean/ });
    assert.throws(create({ durationBuckets: "1,2" }), { name: "TypeError", message: /"durationBuckets"/ });
    assert.throws(create({ durationBuckets: [] }), { name: "RangeError", message: /"durationBuckets" must be a non-empty array/ });
    // A misspelled option was ignored (a review): the default prefix, default metrics on.
    assert.throws(create({ prefx: "app_" }), { name: "TypeError", message: 'Cannot create prometheus exporter as "prefx" is not an option (did you mean "prefix"?)' });
    assert.throws(create({ durationBuckets: [1, 0.5] }), {
      name: "RangeError",
      message: 'Cannot create prometheus exporter as "durationBuckets" must be finite positive seconds in increasing order: current value is [1, 0.5]',
    });
    assert.throws(create({ durationBuckets: [0, 1] }), RangeError);
    assert.throws(create({ durationBuckets: [1, Infinity] }), RangeError);
  });

  test("prometheus exporter: an empty prefix is allowed", async () => {
    const text = parsePromText(await createPrometheusExporter({ prefix: "" }).render());
    assert.ok(text.types.has("denials_total"));
  });

  test("prometheus exporter: a second exporter with the same prefix on one registry is refused, the registry untouched", () => {
    const registry = new Registry();
    createPrometheusExporter({ registry });
    const before = registry.getMetricsAsArray().length;
    assert.throws(create({ registry }), { name: "RangeError", message: /"prefix" must be .*serve_hygiene_requests_in_flight is taken/ });
    assert.equal(registry.getMetricsAsArray().length, before);
  });

  test("prometheus exporter: any one of its families already registered is refused before anything is registered", () => {
    const families = new Registry();
    createPrometheusExporter({ registry: families, prefix: "", defaultMetrics: false });
    const names = families.getMetricsAsArray().map((m) => m.name);
    assert.ok(names.length >= 19, `the exporter's families: ${names.join(", ")}`);
    for (const name of names) {
      const registry = new Registry();
      new Counter({ name, help: "the host's own", registers: [registry] });
      assert.throws(create({ registry, prefix: "", defaultMetrics: false }), { name: "RangeError", message: new RegExp(`${name} is taken`) }, name);
      assert.deepEqual(registry.getMetricsAsArray().map((m) => m.name), [name], `${name}: the registry untouched`);
    }
  });
});
