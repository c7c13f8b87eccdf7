import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { drainForProxy, PROXY_DRAIN_MARGIN_MS, validateLifecycle } from "../../../src/core/lifecycle/lifecycle_config.ts";

describe("lifecycle config", () => {
  test("lifecycle config: the defaults of DESIGN.md pass and fill pre-stop 0 and flush margin 2 s", () => {
    const l = validateLifecycle({ requestTimeoutMs: 20_000, drainTimeoutMs: 25_000 });
    assert.deepEqual(l, {
      requestTimeoutMs: 20_000,
      drainTimeoutMs: 25_000,
      preStopDelayMs: 0,
      platformGraceMs: undefined,
      flushMarginMs: 2_000,
    });
    assert.ok(Object.isFrozen(l));
  });

  test("lifecycle config: a request timeout not below the drain window is refused with both numbers", () => {
    assert.throws(() => validateLifecycle({ requestTimeoutMs: 25_000, drainTimeoutMs: 25_000 }), {
      name: "RangeError",
      message: /^Cannot validate lifecycle as "requestTimeoutMs" must be below "drainTimeoutMs": current values are 25000 and 25000/,
    });
  });

  test("lifecycle config: a disabled request timeout (Infinity) skips its check", () => {
    assert.equal(validateLifecycle({ requestTimeoutMs: Infinity, drainTimeoutMs: 1_000 }).requestTimeoutMs, Infinity);
  });

  test("lifecycle config: a pre-stop delay not below the drain window is refused with both numbers", () => {
    assert.throws(() => validateLifecycle({ requestTimeoutMs: 20_000, drainTimeoutMs: 25_000, preStopDelayMs: 30_000 }), {
      name: "RangeError",
      message: /^Cannot validate lifecycle as "preStopDelayMs" must be below "drainTimeoutMs": current values are 30000 and 25000/,
    });
    assert.equal(
      validateLifecycle({ requestTimeoutMs: Infinity, drainTimeoutMs: 25_000, preStopDelayMs: 24_999 }).preStopDelayMs,
      24_999,
    );
  });

  test("lifecycle config: the pre-stop delay plus the request timeout must be below the drain window (requests are admitted during the delay)", () => {
    assert.throws(() => validateLifecycle({ requestTimeoutMs: 20_000, drainTimeoutMs: 25_000, preStopDelayMs: 5_000 }), {
      name: "RangeError",
      message: /^Cannot validate lifecycle as "preStopDelayMs" \+ "requestTimeoutMs" must be below "drainTimeoutMs": current values are 5000 \+ 20000 = 25000 and 25000/,
    });
    assert.equal(validateLifecycle({ requestTimeoutMs: 20_000, drainTimeoutMs: 26_000, preStopDelayMs: 5_000 }).drainTimeoutMs, 26_000);
    assert.equal(validateLifecycle({ requestTimeoutMs: 20_000, drainTimeoutMs: 25_000, preStopDelayMs: 4_999 }).preStopDelayMs, 4_999);
  });

  test("lifecycle config: drain plus flush margin beyond a declared platform grace is a startup error naming the numbers", () => {
    assert.throws(() => validateLifecycle({ requestTimeoutMs: 20_000, drainTimeoutMs: 25_000, platformGraceMs: 10_000 }), {
      name: "RangeError",
      message:
        /^Cannot validate lifecycle as "drainTimeoutMs" \+ "flushMarginMs" must fit inside "platformGraceMs": current values are 25000 \+ 2000 = 27000 and 10000/,
    });
    assert.throws(
      () => validateLifecycle({ requestTimeoutMs: 5_000, drainTimeoutMs: 9_000, platformGraceMs: 10_000 }),
      /9000 \+ 2000 = 11000 and 10000/,
    );
  });

  test("lifecycle config: drain plus flush margin exactly filling the grace fits", () => {
    const l = validateLifecycle({ requestTimeoutMs: 5_000, drainTimeoutMs: 8_000, platformGraceMs: 10_000 });
    assert.equal(l.platformGraceMs, 10_000);
    validateLifecycle({ requestTimeoutMs: 5_000, drainTimeoutMs: 9_500, platformGraceMs: 10_000, flushMarginMs: 500 });
  });

  test("lifecycle config: malformed fields are refused in the shared message form", () => {
    assert.throws(() => validateLifecycle({ requestTimeoutMs: 0, drainTimeoutMs: 25_000 }), {
      name: "RangeError",
      message: 'Cannot validate lifecycle as "requestTimeoutMs" must be a positive integer or Infinity: current value is 0',
    });
    assert.throws(() => validateLifecycle({ requestTimeoutMs: 1_000, drainTimeoutMs: 0 }), /"drainTimeoutMs" must be a positive integer or Infinity/);
    // An endless drain is allowed, but never inside a platform's fixed grace.
    assert.equal(validateLifecycle({ requestTimeoutMs: 1_000, drainTimeoutMs: Infinity }).drainTimeoutMs, Infinity);
    assert.throws(() => validateLifecycle({ requestTimeoutMs: 1_000, drainTimeoutMs: Infinity, platformGraceMs: 10_000 }), /must fit inside "platformGraceMs"/);
    assert.throws(() => validateLifecycle({ requestTimeoutMs: 1_000, drainTimeoutMs: 2_000, preStopDelayMs: -1 }), RangeError);
    assert.throws(() => validateLifecycle({ requestTimeoutMs: 1_000, drainTimeoutMs: 2_000, platformGraceMs: 0 }), RangeError);
    assert.throws(() => validateLifecycle({ requestTimeoutMs: 1_000, drainTimeoutMs: 2_000, flushMarginMs: 1.5 }), RangeError);
    assert.throws(() => validateLifecycle(undefined as never), RangeError);
  });

  test("lifecycle config: the proxy drain is the upstream timeout plus 5 s, and it validates with the request timeout disabled", () => {
    assert.equal(PROXY_DRAIN_MARGIN_MS, 5_000);
    assert.equal(drainForProxy(30_000), 35_000);
    validateLifecycle({ requestTimeoutMs: Infinity, drainTimeoutMs: drainForProxy(30_000) });
    assert.throws(() => drainForProxy(0), {
      name: "RangeError",
      message: 'Cannot derive proxy drain as "upstreamTimeoutMs" must be a positive integer: current value is 0',
    });
    assert.throws(() => drainForProxy(Infinity), RangeError);
  });
});
