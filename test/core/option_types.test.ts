// Options that must be functions or booleans are checked when the factory runs, before anything
// listens (a review): a hook that was no function failed inside the library's guard against a
// throwing hook, and every event, metric and log line was lost without a word; `exitOnDrained:
// "false"` (a string from the environment) is truthy and ended the process; a bad onListen was
// found only once listening, a bad onDrained only after onListen had run.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { createFixedWindowLimiter, createGuard, serveWith } from "../../src/core/mod.ts";
import { rateLimit } from "../../src/hono/mod.ts";
import { createFakeHost } from "../support/fake_host.ts";
import { createFakeServer } from "../support/fake_server.ts";

const mustBe = (what: string, field: string, kind: string, value: string) =>
  ({ name: "TypeError", message: `Cannot ${what} as "${field}" must be ${kind}: current value is ${value}` });

describe("option types", () => {
  test("option types: the guard's hooks must be functions", () => {
    for (const field of ["log", "onDeny", "onEvent", "onError"]) {
      assert.throws(() => createGuard({ loadMonitor: false, [field]: "console" }), mustBe("create guard", field, "a function", '"console"'));
      assert.throws(() => createGuard({ loadMonitor: false, [field]: 5 } as never), mustBe("create guard", field, "a function", "5"));
    }
    createGuard({ loadMonitor: false, log: () => {}, onDeny: () => {}, onEvent: () => {}, onError: () => {} }).dispose();
    // A flag from the environment is a string ("true" was taken as off: a diff review).
    assert.throws(() => createGuard({ loadMonitor: false, rateLimitHeaders: "true" as never }), mustBe("create guard", "rateLimitHeaders", "a boolean", '"true"'));
    createGuard({ loadMonitor: false, rateLimitHeaders: true }).dispose();
  });

  test("option types: Hono's rateLimit({ headers }) must be a boolean", () => {
    const limiter = createFixedWindowLimiter({ limit: 1, windowMs: 1000 });
    assert.throws(() => rateLimit({ limiter, headers: "true" as never }), mustBe("create rateLimit", "headers", "a boolean", '"true"'));
    rateLimit({ limiter, headers: true });
  });

  test("option types: serve()'s hooks must be functions and exitOnDrained a boolean, refused before anything listens or any hook runs", async () => {
    let listened = 0;
    const listen = (_fetch: unknown) => (listened++, createFakeServer());
    const host = createFakeHost().host;
    let heard = 0;
    const serve = (options: Record<string, unknown>) => serveWith(host, listen, () => new Response("ok"), { loadMonitor: false, onListen: () => void heard++, ...options });
    await assert.rejects(serve({ exitOnDrained: "false" }), mustBe("serve", "exitOnDrained", "a boolean", '"false"'));
    await assert.rejects(serve({ onListen: true }), mustBe("serve", "onListen", "a function", "true"));
    await assert.rejects(serve({ onDrained: "flush" }), mustBe("serve", "onDrained", "a function", '"flush"'));
    await assert.rejects(serve({ onError: {} }), mustBe("create guard", "onError", "a function", "[object Object]"));
    assert.equal(listened, 0, "nothing listened");
    assert.equal(heard, 0, "no onListen ran");
    const handle = await serve({ exitOnDrained: false, onDrained: () => {} });
    assert.equal(heard, 1);
    await handle.shutdown();
  });

  test("option types: an adapter's check of its own options against the guard's config runs before it listens, and its error is the rejection (not an io ServeError)", async () => {
    let listened = 0;
    const seen: (number | undefined)[] = [];
    const listen = Object.assign((_fetch: unknown) => (listened++, createFakeServer()), {
      check: (config: { bodyLimitBytes: number | undefined }) => {
        seen.push(config.bodyLimitBytes);
        if (config.bodyLimitBytes === 7) throw new RangeError("seven");
      },
    });
    const host = createFakeHost().host;
    await assert.rejects(serveWith(host, listen, () => new Response("ok"), { loadMonitor: false, bodyLimitBytes: 7 }), { name: "RangeError", message: "seven" });
    assert.equal(listened, 0);
    const handle = await serveWith(host, listen, () => new Response("ok"), { loadMonitor: false, bodyLimitBytes: 8 });
    assert.deepEqual(seen, [7, 8]);
    assert.equal(listened, 1);
    await handle.shutdown();
  });
});
