// Every factory refuses an option it does not have, naming it and the option it most likely
// meant: from plain JavaScript (or a config built from JSON or the environment) a misspelled
// option was ignored, and the bound it was meant to set silently kept its default (a review:
// `serve(h, { bodyLimit: 10, timeout: 50, concurrencylimit: 1 })` took a 100 kB body, a 300 ms
// handler and 4 requests at once).
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import {
  createAdaptiveLimit,
  createClientKey,
  createConcurrencyLimit,
  createFixedWindowLimiter,
  createFlowQueue,
  createGuard,
  createHealth,
  createHost,
  createInFlightLimiter,
  createRateStore,
  createScopedLimiter,
  createShedLogger,
  createShutdownController,
  createTokenBucketLimiter,
  serveWith,
} from "../../src/core/mod.ts";
import { createLoadMonitor } from "../../src/core/overload/load_monitor.ts";
import { createMemoryCeiling } from "../../src/core/overload/memory_ceiling.ts";
import { _GUARD_KEYS } from "../../src/core/_option_keys.ts";
import { createManualClock } from "../../src/testing/manual_clock.ts";
import { createFakeHost } from "../support/fake_host.ts";
import { createFakeServer } from "../support/fake_server.ts";

const refused = (what: string, key: string, near?: string) =>
  ({ name: "TypeError", message: `Cannot ${what} as "${key}" is not an option${near === undefined ? "" : ` (did you mean "${near}"?)`}` });

describe("option keys", () => {
  test("option keys: every factory refuses an option it does not have, naming the one it most likely meant", () => {
    const limiter = () => createFixedWindowLimiter({ limit: 1 });
    const cases: [() => unknown, string, string, string | undefined][] = [
      [() => createGuard({ shedWaitMS: 5 } as never), "create guard", "shedWaitMS", "shedWaitMs"],
      [() => createGuard({ bodyLimit: 10 } as never), "create guard", "bodyLimit", "bodyLimitBytes"],
      [() => createGuard({ concurrencylimit: 1 } as never), "create guard", "concurrencylimit", "concurrencyLimit"],
      [() => createGuard({ timeout: 50 } as never), "create guard", "timeout", undefined],
      [() => createGuard({ rateLimit: [] } as never), "create guard", "rateLimit", "rateLimits"],
      [() => createGuard({ rateLimits: [{ limitter: limiter() }] } as never), "create guard", "rateLimits[0].limitter", "limiter"],
      [() => createGuard({ memory: { ceilingBytes: 1e9, rss: () => 1 } } as never), "create guard", "memory.rss", undefined],
      [() => createGuard({ routeBodyLimits: [{ path: "/a", bytes: 1, methods: "POST" }] } as never), "resolve config", "routeBodyLimits[0].methods", "method"],
      [() => createFixedWindowLimiter({ max: 10, window: 1000 } as never), "create fixed window limiter", "max", undefined],
      [() => createTokenBucketLimiter({ ratePerSecond: 1, brust: 5 } as never), "create token bucket limiter", "brust", "burst"],
      [() => createInFlightLimiter({ overal: 2 } as never), "create in-flight limiter", "overal", "overall"],
      [() => createFlowQueue({ workers: 1, capacity: 1, onevent: () => {} } as never), "create flow queue", "onevent", "onEvent"],
      [() => createScopedLimiter({ scopes: [{ name: "a", limiter: limiter(), keys: () => "k" }] } as never), "create scoped limiter", "scopes[0].keys", "key"],
      [() => createScopedLimiter({ scopes: [{ name: "a", limiter: limiter() }], onevent: () => {} } as never), "create scoped limiter", "onevent", "onEvent"],
      [() => createConcurrencyLimit({ limit: 2, shedWaitMS: 5 } as never), "create concurrency limit", "shedWaitMS", "shedWaitMs"],
      [() => createAdaptiveLimit({ maxlimit: 50 } as never), "create adaptive limit", "maxlimit", "maxLimit"],
      [() => createLoadMonitor({ highWatermarkMS: 5 } as never), "create load monitor", "highWatermarkMS", "highWatermarkMs"],
      [() => createMemoryCeiling({ ceilingBytes: 1e9, intervalMS: 5 } as never), "create memory ceiling", "intervalMS", "intervalMs"],
      [() => createClientKey({ trustedProxy: ["10.0.0.0/8"] } as never), "create client key", "trustedProxy", "trustedProxies"],
      [() => createRateStore({ take: async () => [] } as never, { timeoutMS: 5 } as never), "create rate store", "timeoutMS", "timeoutMs"],
      [() => createShedLogger({ log: () => {}, interval: 5 } as never), "create shed logger", "interval", "intervalMs"],
      [() => createShutdownController({ mode: "manual", signal: new AbortController().signal } as never), "create shutdown controller", "signal", undefined],
      [() => createHealth({ controler: undefined, memory: undefined, x: 1 } as never), "create health", "x", undefined],
      [() => createHost({ rSS: () => 1 } as never), "create host", "rSS", "rss"],
    ];
    for (const [make, what, key, near] of cases) assert.throws(make, refused(what, key, near), key);
    // Nested options are named by their path from the guard's options.
    assert.throws(() => createGuard({ concurrencyLimit: { maxlimit: 5 } } as never), refused("resolve config", "concurrencyLimit.maxlimit", "maxLimit"));
    assert.throws(() => createGuard({ loadMonitor: { highWatermarkMS: 5 } } as never), refused("create guard", "loadMonitor.highWatermarkMS", "highWatermarkMs"));
    assert.throws(() => createGuard({ inFlightPerKey: { perkey: 2 } } as never), refused("create guard", "inFlightPerKey.perkey", "perKey"));
    assert.throws(() => createGuard({ clientKey: { ipv6prefix: 48 } } as never), refused("create guard", "clientKey.ipv6prefix", "ipv6Prefix"));
  });

  test("option keys: an option left undefined sets nothing and is taken, known or not; every known option is taken", () => {
    const clock = createManualClock();
    const guard = createGuard({ clock, loadMonitor: false, bodyLimitBytes: undefined, bodyLimit: undefined } as never);
    assert.equal(guard.config.bodyLimitBytes, undefined);
    guard.dispose();
    // The list is the options type's (it compiles as its key list).
    assert.ok(Object.keys(_GUARD_KEYS).includes("rateLimits") && Object.keys(_GUARD_KEYS).length === 25);
  });

  test("option keys: serve() refuses a key neither it nor its adapter has (Deno.serve's signal with its own way), before anything listens", async () => {
    let listened = 0;
    const listen = Object.assign((_fetch: unknown) => (listened++, createFakeServer()), { optionKeys: ["dropUnreadBody"] });
    const host = createFakeHost().host;
    await assert.rejects(serveWith(host, listen, () => new Response("ok"), { loadMonitor: false, requestTimeout: 50 } as never), refused("serve", "requestTimeout", "requestTimeoutMs"));
    await assert.rejects(serveWith(host, listen, () => new Response("ok"), { loadMonitor: false, signal: new AbortController().signal } as never), {
      name: "TypeError",
      message: /^Cannot serve as "signal" is not an option: give a "controller"/,
    });
    await assert.rejects(serveWith(host, listen, () => new Response("ok"), { loadMonitor: false, headersTimeoutMs: 5 } as never), refused("serve", "headersTimeoutMs"));
    // The guard's own two that serve() sets itself.
    await assert.rejects(serveWith(host, listen, () => new Response("ok"), { loadMonitor: false, stopping: new AbortController() } as never), refused("serve", "stopping"));
    assert.equal(listened, 0);
    const handle = await serveWith(host, listen, () => new Response("ok"), {
      loadMonitor: false, dropUnreadBody: true, port: 0, hostname: "127.0.0.1", preStopDelayMs: 0, platformGraceMs: undefined, flushMarginMs: 100, onDrained: () => {}, onListen: () => {}, exitOnDrained: false,
    } as never);
    assert.equal(listened, 1);
    await handle.shutdown();
  });
});
