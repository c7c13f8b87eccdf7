import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { DEFAULT_CONFIG, resolveConfig } from "../../src/core/config.ts";

const FIELDS = ["maxConnections", "concurrencyLimit", "requestTimeoutMs", "bodyLimitBytes", "drainTimeoutMs"] as const;

describe("config", () => {
  test("config: defaults are 20 s request timeout, 25 s drain, no service-wide body cap, an adaptive concurrency limit", () => {
    const c = resolveConfig();
    assert.equal(c.requestTimeoutMs, 20_000);
    assert.equal(c.drainTimeoutMs, 25_000);
    assert.equal(c.bodyLimitBytes, undefined);
    assert.deepEqual(c.concurrencyLimit, {}, "adaptive, with the adaptive limiter's defaults");
    assert.equal(c.maxConnections, 4096);
    assert.deepEqual(resolveConfig({}), c);
    assert.deepEqual(c, DEFAULT_CONFIG);
  });

  test("config: given values win and the result is frozen", () => {
    const c = resolveConfig({ concurrencyLimit: 8, bodyLimitBytes: 1024, requestTimeoutMs: 1000, drainTimeoutMs: 2000 });
    assert.equal(c.concurrencyLimit, 8);
    assert.equal(c.bodyLimitBytes, 1024);
    assert.ok(Object.isFrozen(c));
  });

  test("config: the concurrency limit may be the adaptive limiter's options, validated up front", () => {
    const c = resolveConfig({ concurrencyLimit: { minLimit: 4, maxLimit: 64 } });
    assert.deepEqual(c.concurrencyLimit, { minLimit: 4, maxLimit: 64 });
    assert.ok(Object.isFrozen(c.concurrencyLimit));
    assert.throws(() => resolveConfig({ concurrencyLimit: { maxLimit: 0 } }), /"maxLimit" must be a positive integer: current value is 0/);
  });

  test("config: Infinity means uncapped and never throws", () => {
    const c = resolveConfig({
      maxConnections: Infinity,
      concurrencyLimit: Infinity,
      bodyLimitBytes: Infinity,
      drainTimeoutMs: Infinity,
    });
    assert.equal(c.maxConnections, Infinity);
    assert.equal(c.concurrencyLimit, Infinity);
  });

  for (const field of FIELDS) {
    for (const bad of [0, -1, NaN, 1.5, "10", null, -Infinity, 2 ** 60, true]) {
      test(`config: ${field} = ${String(bad)} throws a RangeError naming the field and the value`, () => {
        assert.throws(
          () => resolveConfig({ [field]: bad } as never),
          (error: unknown) => {
            assert.ok(error instanceof RangeError);
            assert.match(error.message, new RegExp(`^Cannot resolve config as "${field}" must be a positive integer or Infinity: current value is `));
            const shown = typeof bad === "string" ? `"${bad}"` : String(bad);
            assert.ok(error.message.endsWith(`current value is ${shown}`), error.message);
            return true;
          },
        );
      });
    }
  }

  test("config: the request timeout must be strictly below the drain window", () => {
    assert.throws(() => resolveConfig({ requestTimeoutMs: 25_000 }), /"requestTimeoutMs" must be below "drainTimeoutMs": current values are 25000 and 25000/);
    assert.throws(() => resolveConfig({ drainTimeoutMs: 10_000 }), /current values are 20000 and 10000/);
    assert.equal(resolveConfig({ requestTimeoutMs: 24_999 }).requestTimeoutMs, 24_999);
  });

  test("config: a disabled request timeout (Infinity) lifts the ordering rule", () => {
    const c = resolveConfig({ requestTimeoutMs: Infinity, drainTimeoutMs: 1000 });
    assert.equal(c.requestTimeoutMs, Infinity);
    assert.equal(c.drainTimeoutMs, 1000);
  });

  test("config: routeBodyLimits are validated at startup, each error naming the entry's field", () => {
    const bad: [unknown, RegExp, ErrorConstructor][] = [
      ["/upload", /"routeBodyLimits" must be an array: current value is "\/upload"/, TypeError],
      [[null], /"routeBodyLimits\[0\]" must be an object: current value is null/, TypeError],
      [[{ path: "upload", bytes: 10 }], /"routeBodyLimits\[0\].path" must be a path starting with "\/": current value is "upload"/, TypeError],
      [[{ path: "/a", method: "", bytes: 10 }], /"routeBodyLimits\[0\].method" must be a method name: current value is ""/, TypeError],
      [[{ path: "/a", bytes: 10 }, { path: "/b", bytes: NaN }], /"routeBodyLimits\[1\].bytes" must be a positive integer or Infinity: current value is NaN/, RangeError],
      [[{ path: "/a", bytes: -1 }], /"routeBodyLimits\[0\].bytes" must be a positive integer or Infinity: current value is -1/, RangeError],
      // A router's pattern matched no request, its cap applied to none (a review).
      [[{ path: "/users/:id/avatar", bytes: 10 }], /"routeBodyLimits\[0\].path" must be a literal path, exact or a prefix ending in "\*" \(no ":param" segment, no "\*" before the end\): current value is "\/users\/:id\/avatar"/, TypeError],
      [[{ path: "/api/*/note", bytes: 10 }], /"routeBodyLimits\[0\].path" must be a literal path/, TypeError],
    ];
    // A literal ":" inside a segment, and a prefix, are paths.
    assert.equal(resolveConfig({ routeBodyLimits: [{ path: "/a:b", bytes: 1 }, { path: "/files/*", bytes: 2 }] }).routeBodyLimits.length, 2);
    for (const [routeBodyLimits, message, type] of bad) {
      assert.throws(() => resolveConfig({ routeBodyLimits } as never), (error: unknown) => error instanceof type && message.test((error as Error).message));
    }
  });

  test("config: the body cap ceiling is the largest configured cap, or none when some request has no cap", () => {
    const c = resolveConfig({ bodyLimitBytes: 1024, routeBodyLimits: [{ path: "/upload", method: "post", bytes: 4096 }, { path: "/tiny", bytes: 8 }] });
    assert.equal(c.bodyLimitCeiling, 4096);
    assert.equal(c.routeBodyLimits[0]!.method, "POST");
    assert.ok(Object.isFrozen(c.routeBodyLimits) && Object.isFrozen(c.routeBodyLimits[0]));
    assert.equal(resolveConfig({ bodyLimitBytes: 1024 }).bodyLimitCeiling, 1024);
    assert.equal(resolveConfig({ routeBodyLimits: [{ path: "/upload", bytes: 4096 }] }).bodyLimitCeiling, undefined);
    assert.equal(resolveConfig({ bodyLimitBytes: 1024, routeBodyLimits: [{ path: "/any", bytes: Infinity }] }).bodyLimitCeiling, undefined);
  });

  test("config: a non-object config throws a TypeError", () => {
    assert.throws(() => resolveConfig(42 as never), TypeError);
    assert.throws(() => resolveConfig(null as never), TypeError);
  });
});
