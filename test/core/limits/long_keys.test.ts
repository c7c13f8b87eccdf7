// Keys a client chooses (a custom key function reading a header) may be long. A key table
// held each as given: ~60 KB a key held 244 MB in one table on Deno, and V8 hashes a string of
// 16,384 characters or more by its length alone, so lookups among same-length keys compared
// them all (a review: 4 ms a request on Node). Past _LONG_KEY characters a key is held as its
// digest; these tests assert what is held and that budgets stay per key, never speed.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { _heldKey, _LONG_KEY } from "../../../src/core/limits/_key_table.ts";
import { createFixedWindowLimiter } from "../../../src/core/limits/fixed_window.ts";
import { createTokenBucketLimiter } from "../../../src/core/limits/token_bucket.ts";
import { createInFlightLimiter } from "../../../src/core/limits/inflight_limit.ts";
import { createManualClock } from "../../../src/testing/manual_clock.ts";

/** Runs `body` while recording the string keys every Map is given by `set` (restored after). */
function keysSet(body: () => void): string[] {
  const proto = Map.prototype as unknown as { set(k: unknown, v: unknown): unknown };
  const original = proto.set;
  const seen: string[] = [];
  proto.set = function (this: Map<unknown, unknown>, k: unknown, v: unknown) {
    if (typeof k === "string") seen.push(k);
    return original.call(this, k, v);
  };
  try {
    body();
  } finally {
    proto.set = original;
  }
  return seen;
}

// Same length, differing only in their last characters: V8 hashes them alike.
const long = (i: number) => "k".repeat(20_000) + String(i).padStart(8, "0");

describe("long keys", () => {
  test("long keys: a key up to _LONG_KEY characters is held as it is; a longer one as a short digest, the same for the same key, distinct for distinct keys", () => {
    const edge = "x".repeat(_LONG_KEY);
    assert.equal(_heldKey(edge), edge);
    assert.equal(_heldKey("203.0.113.7"), "203.0.113.7");
    const a = _heldKey(long(1));
    assert.ok(a.length < 40, `held as ${a.length} characters`);
    assert.notEqual(a, _heldKey(long(2)));
    assert.equal(_heldKey(long(1)), a, "the same key, the same name (after another key)");
    assert.equal(_heldKey("x".repeat(_LONG_KEY + 1)), _heldKey("x".repeat(_LONG_KEY + 1)), "equal keys that are distinct strings");
    assert.equal(_heldKey(a), a, "idempotent");
    assert.notEqual(_heldKey(a.slice(a.indexOf(":") + 1)), a, "a client sending the digest's text is not that key");
  });

  test("long keys: the fixed window, the token bucket and the per-key in-flight cap keep one budget per long key and hold none of them whole", async () => {
    const clock = createManualClock();
    const window = createFixedWindowLimiter({ limit: 1, windowMs: 60_000, clock });
    const bucket = createTokenBucketLimiter({ ratePerSecond: 1, burst: 1, clock });
    const inFlight = createInFlightLimiter({ perKey: 1, overall: Infinity, shedWaitMs: 0, clock });
    const slots: unknown[] = [];
    const held = keysSet(() => {
      for (let i = 0; i < 50; i++) {
        assert.equal(window.take(long(i)).allowed, true, `window ${i}`);
        assert.equal(bucket.take(long(i)).allowed, true, `bucket ${i}`);
        slots.push(inFlight.tryAcquire(long(i)));
      }
      for (let i = 0; i < 50; i++) {
        assert.equal(window.take(long(i)).allowed, false, `window ${i} spent`);
        assert.equal(bucket.take(long(i)).allowed, false, `bucket ${i} spent`);
      }
    });
    assert.equal(window.size.value, 50);
    assert.equal(bucket.size.value, 50);
    assert.ok(held.length >= 100, `${held.length} keys set`);
    assert.deepEqual(held.filter((k) => k.length > _LONG_KEY).map((k) => k.length), [], "no long key held whole");
    for (const slot of slots) assert.ok(typeof slot === "object" && slot !== null && "release" in slot, "each long key got its slot");
    const second = await inFlight.acquire(long(3));
    assert.ok("reason" in second, "the long key's one slot is taken");
  });
});
