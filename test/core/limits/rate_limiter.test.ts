import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { isRateLimitedError, RateLimitedError } from "../../../src/core/limits/rate_limiter.ts";
import { isHygieneError } from "../../../src/core/errors.ts";

describe("rate limiter", () => {
  test("rate limiter: RateLimitedError carries the code, the wait and the limit", () => {
    const error = new RateLimitedError({ retryAfterMs: 29_001, limit: 600, scope: "tenant" });
    assert.ok(isRateLimitedError(error) && isHygieneError(error));
    assert.equal(error.code, "RATE_LIMITED");
    assert.equal(error.retryAfterMs, 29_001);
    assert.equal(error.limit, 600);
    assert.equal(error.scope, "tenant");
    assert.equal(error.name, "RateLimitedError");
    assert.ok(!isRateLimitedError(new Error("x")));
  });

  test("rate limiter: the brand survives a second copy of the class (no instanceof needed)", () => {
    // What the other copy's class sets: its brand, its code and its fields.
    const foreign = Object.assign(new Error("x"), { code: "RATE_LIMITED", retryAfterMs: 1000, limit: 5, [Symbol.for("serve-hygiene.error")]: true });
    assert.ok(isRateLimitedError(foreign));
  });
});
