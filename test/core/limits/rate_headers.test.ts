import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { rateLimitedResponse, rateLimitHeaders } from "../../../src/core/limits/rate_headers.ts";
import { createFixedWindowLimiter } from "../../../src/core/limits/fixed_window.ts";
import { createTokenBucketLimiter } from "../../../src/core/limits/token_bucket.ts";
import { createManualClock } from "../../../src/testing/manual_clock.ts";
import type { RateDecision } from "../../../src/core/limits/rate_limiter.ts";

const denied: RateDecision = {
  allowed: false, retryAfterMs: 29_001, remaining: 0, limit: 600, resetMs: 29_001, windowMs: 60_000, reason: "over-limit",
};

describe("rate headers", () => {
  test("rate headers: RateLimit and RateLimit-Policy in structured-field form", () => {
    assert.deepEqual(rateLimitHeaders(denied), { RateLimit: '"default";r=0;t=30' });
    assert.deepEqual(rateLimitHeaders(denied, { policy: true, name: "per-ip" }), {
      RateLimit: '"per-ip";r=0;t=30',
      "RateLimit-Policy": '"per-ip";q=600;w=60',
    });
    assert.equal(rateLimitHeaders(denied, { name: 'a"b\\c' }).RateLimit, '"a\\"b\\\\c";r=0;t=30');
    assert.throws(() => rateLimitHeaders(denied, { name: "caf\u00e9" }), TypeError);
  });

  test("rate headers: fields from real decisions of both limiters", () => {
    const clock = createManualClock();
    const window = createFixedWindowLimiter({ limit: 600, windowMs: 60_000, clock });
    window.take("k");
    clock.advance(15_500);
    assert.deepEqual(rateLimitHeaders(window.take("k"), { policy: true }), {
      RateLimit: '"default";r=598;t=45',
      "RateLimit-Policy": '"default";q=600;w=60',
    });
    const bucket = createTokenBucketLimiter({ ratePerSecond: 10, burst: 20, clock });
    assert.deepEqual(rateLimitHeaders(bucket.take("k"), { policy: true }), {
      RateLimit: '"default";r=19;t=1',
      "RateLimit-Policy": '"default";q=20;w=2',
    });
  });

  // A review: `w` was rounded up to whole seconds and `q` kept, so a client pacing by the policy
  // ran up to 10 times slower than allowed.
  test("rate headers: a policy whose window is not whole seconds is told over the next whole second, its quota scaled to it", () => {
    const clock = createManualClock();
    const policy = (d: RateDecision) => rateLimitHeaders(d, { policy: true })["RateLimit-Policy"];
    assert.equal(policy(createTokenBucketLimiter({ ratePerSecond: 10, burst: 1, clock }).take("k")), '"default";q=10;w=1');
    assert.equal(policy(createTokenBucketLimiter({ ratePerSecond: 2, burst: 3, clock }).take("k")), '"default";q=4;w=2');
    assert.equal(policy(createFixedWindowLimiter({ limit: 5, windowMs: 500, clock }).take("k")), '"default";q=10;w=1');
    assert.equal(policy(createFixedWindowLimiter({ limit: 5, windowMs: 3_000, clock }).take("k")), '"default";q=5;w=3');
    // Inexact in binary (1000 / 15, × 1): read as the whole numbers they stand for.
    assert.equal(policy(createTokenBucketLimiter({ ratePerSecond: 15, burst: 1, clock }).take("k")), '"default";q=15;w=1');
    assert.equal(policy(createTokenBucketLimiter({ ratePerSecond: 14, burst: 30, clock }).take("k")), '"default";q=42;w=3');
    for (let rate = 1; rate <= 50; rate++) {
      for (let burst = 1; burst <= 10; burst++) {
        const [, q, w] = /q=(\d+);w=(\d+)/.exec(policy(createTokenBucketLimiter({ ratePerSecond: rate, burst, clock }).take(`k${rate}-${burst}`))!)!;
        assert.equal(Number(w), Math.max(1, Math.ceil(burst / rate)), `${rate}/s burst ${burst}`);
        assert.equal(Number(q), Math.floor((burst * Number(w) * rate) / burst), `${rate}/s burst ${burst}`);
      }
    }
  });

  test("rate headers: the 429 has a generic text/plain body and Retry-After", async () => {
    const response = rateLimitedResponse(denied);
    assert.equal(response.status, 429);
    assert.equal(response.headers.get("content-type"), "text/plain; charset=utf-8");
    assert.equal(response.headers.get("retry-after"), "30", "29.001 s rounded up");
    assert.equal(response.headers.get("cache-control"), "no-store");
    assert.equal(response.headers.get("ratelimit"), null, "no RateLimit fields unless asked");
    assert.equal(await response.text(), "Too Many Requests");
  });

  test("rate headers: Retry-After is at least 1 s, whatever the wait", () => {
    assert.equal(rateLimitedResponse({ ...denied, retryAfterMs: 1 }).headers.get("retry-after"), "1");
    assert.equal(rateLimitedResponse({ ...denied, retryAfterMs: 0 }).headers.get("retry-after"), "1");
  });

  test("rate headers: a decision no budget made (every scope skipped: limit Infinity) has no fields, not a quota of 2^31 - 1", () => {
    const unmetered: RateDecision = { allowed: true, retryAfterMs: 0, remaining: Infinity, limit: Infinity, resetMs: 0, windowMs: 0, reason: undefined };
    assert.deepEqual(rateLimitHeaders(unmetered, { policy: true }), {});
  });

  test("rate headers: the 429 carries the RateLimit fields when asked", async () => {
    const response = rateLimitedResponse(denied, { rateLimitHeaders: { policy: true } });
    assert.equal(response.headers.get("ratelimit"), '"default";r=0;t=30');
    assert.equal(response.headers.get("ratelimit-policy"), '"default";q=600;w=60');
    assert.equal(await response.text(), "Too Many Requests");
  });
});
