// The Redis store against an in-process fake `sendCommand`: the commands it sends, script
// loading and NOSCRIPT reloads, key names, replies it cannot read. The scripts' answers
// against a real Redis are in scripts.test.ts.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { createRedisStore } from "../../src/redis/store.ts";
import { createFixedWindowLimiter } from "../../src/core/limits/fixed_window.ts";
import { createTokenBucketLimiter } from "../../src/core/limits/token_bucket.ts";
import type { RateStoreCheck, RateStoreFailure, RateStoreReply } from "../../src/core/limits/rate_store.ts";
import { createManualClock } from "../../src/testing/manual_clock.ts";
import { runtime } from "../support/runtime.ts";

const fw = (key: string, limiter = "ip"): RateStoreCheck => ({ algorithm: "fixed-window", limiter, key, cost: 1, limit: 10, windowMs: 1000, intervalMs: 1000 });
const tb = (key: string): RateStoreCheck => ({ algorithm: "token-bucket", limiter: "api", key, cost: 2, limit: 8, windowMs: 2000, intervalMs: 250 });

/** A Redis that records commands; EVALSHA answers allow-all unless told to answer NOSCRIPT. */
function fakeRedis() {
  const sent: string[][] = [];
  const scripts = new Map<string, string>();
  let flushes = 0;
  let answer: ((args: string[]) => unknown) | undefined;
  const client = {
    sendCommand: async (args: string[]) => {
      sent.push(args);
      if (args[0] === "SCRIPT" && args[1] === "LOAD") {
        const sha = `sha${scripts.size + 1}`;
        scripts.set(sha, args[2]!);
        return sha;
      }
      if (args[0] === "EVALSHA") {
        if (!scripts.has(args[1]!)) throw new Error("NOSCRIPT No matching script. Please use EVAL.");
        if (answer) return answer(args);
        const n = Number(args[2]);
        return ["1700000000", "500", ...Array.from({ length: n }, () => ["1", "0", "9", "1000"]).flat()];
      }
      throw new Error(`unexpected ${args[0]}`);
    },
  };
  return {
    client,
    sent,
    scripts,
    flush() {
      scripts.clear();
      flushes++;
    },
    answerWith(fn: (args: string[]) => unknown) {
      answer = fn;
    },
    get flushes() {
      return flushes;
    },
  };
}

const reply = (a: RateStoreReply | RateStoreFailure | Promise<RateStoreReply | RateStoreFailure>) => Promise.resolve(a);

describe(`redis store (${runtime})`, () => {
  test(`loads its script once, then runs it by EVALSHA with the keys and five arguments a check (${runtime})`, async () => {
    const redis = fakeRedis();
    const store = createRedisStore({ client: redis.client, timeoutMs: 1000 });
    const a = await reply(store.call([fw("10.0.0.1")]));
    const b = await reply(store.call([fw("10.0.0.2")]));
    assert.deepEqual(a, { now: 1700000000000.5, results: [{ allowed: true, retryAfterMs: 0, remaining: 9, resetMs: 1000 }] });
    assert.ok("results" in b);
    assert.deepEqual(redis.sent.map((c) => c[0]), ["SCRIPT", "EVALSHA", "EVALSHA"]);
    const evalsha = redis.sent[1]!;
    assert.deepEqual(evalsha.slice(0, 3), ["EVALSHA", "sha1", "1"]);
    assert.deepEqual(evalsha.slice(4), ["f", "1", "10", "1000", "1000"]);
    assert.equal(store.name, "redis");
  });

  test(`concurrent first calls load the script once (${runtime})`, async () => {
    const redis = fakeRedis();
    const store = createRedisStore({ client: redis.client, timeoutMs: 1000 });
    await Promise.all(Array.from({ length: 20 }, (_, i) => reply(store.call([fw(`k${i}`)]))));
    assert.equal(redis.sent.filter((c) => c[0] === "SCRIPT").length, 1);
    assert.equal(redis.sent.filter((c) => c[0] === "EVALSHA").length, 20);
  });

  test(`NOSCRIPT (a restart, a flush, an eviction) reloads the script once and retries the call (${runtime})`, async () => {
    const redis = fakeRedis();
    const store = createRedisStore({ client: redis.client, timeoutMs: 1000 });
    await reply(store.call([fw("k")]));
    redis.flush();
    const answers = await Promise.all(Array.from({ length: 5 }, (_, i) => reply(store.call([fw(`k${i}`)]))));
    assert.ok(answers.every((a) => "results" in a), "every call answered after the reload");
    assert.equal(redis.sent.filter((c) => c[0] === "SCRIPT").length, 2, "loaded once more for all of them");
    assert.equal(store.state, "ok");
  });

  test(`one script per algorithm, and one for a call that mixes them (${runtime})`, async () => {
    const redis = fakeRedis();
    const store = createRedisStore({ client: redis.client, timeoutMs: 1000 });
    await reply(store.call([fw("k")]));
    await reply(store.call([tb("k")]));
    await reply(store.call([tb("k"), fw("k")]));
    await reply(store.call([fw("j"), tb("j")]));
    const loads = [...redis.scripts.values()];
    assert.equal(loads.length, 3);
    assert.ok(loads[0]!.includes("HMGET") && !loads[0]!.includes("'GET'"), "the fixed window's script");
    assert.ok(loads[1]!.includes("'GET'") && !loads[1]!.includes("HMGET"), "the token bucket's script");
    assert.ok(loads[2]!.includes("HMGET") && loads[2]!.includes("'GET'"));
    for (const s of loads) assert.ok(s.includes("redis.call('TIME')"), "timed by the server");
  });

  test(`key names are the prefix, the algorithm, the limiter's name and a hash: the client key never appears (${runtime})`, async () => {
    const redis = fakeRedis();
    const store = createRedisStore({ client: redis.client, prefix: "{app}:", timeoutMs: 1000 });
    const hostile = "x\r\n*1\r\n$8\r\nFLUSHALL\r\n" + "y".repeat(10_000);
    await reply(store.call([fw(hostile, "ip"), tb("10.0.0.1")]));
    const evalsha = redis.sent.find((c) => c[0] === "EVALSHA")!;
    const [k1, k2] = evalsha.slice(3, 5);
    assert.match(k1!, /^\{app\}:fw:ip:[A-Za-z0-9_-]{22}$/);
    assert.match(k2!, /^\{app\}:tb:api:[A-Za-z0-9_-]{22}$/);
    assert.ok(!evalsha.some((a) => a.includes("FLUSHALL") || a.includes("10.0.0.1")));
    const again = createRedisStore({ client: redis.client, prefix: "{app}:", timeoutMs: 1000 });
    await reply(again.call([fw(hostile, "ip")]));
    assert.equal(redis.sent.filter((c) => c[0] === "EVALSHA").at(-1)![3], k1, "every instance names a budget alike");
  });

  test(`an error other than NOSCRIPT, or a reply it cannot read, fails the call without a reload (${runtime})`, async () => {
    const redis = fakeRedis();
    const store = createRedisStore({ client: redis.client, timeoutMs: 1000, fallbackAfter: 100 });
    await reply(store.call([fw("k")]));
    redis.answerWith(() => {
      throw new Error("OOM command not allowed");
    });
    const a = (await reply(store.call([fw("k")]))) as RateStoreFailure;
    assert.equal(a.failure, "error");
    assert.match(String((a.error as Error).message), /OOM/);
    redis.answerWith(() => ["1", "1"]);
    const b = (await reply(store.call([fw("k")]))) as RateStoreFailure;
    assert.equal(b.failure, "error");
    assert.ok(b.error instanceof TypeError);
    assert.equal(redis.sent.filter((c) => c[0] === "SCRIPT").length, 1);
  });

  test(`a Redis that does not answer fails the limiter's check at the store's timeout (${runtime})`, async () => {
    const clock = createManualClock();
    const store = createRedisStore({ client: { sendCommand: () => new Promise(() => {}) }, timeoutMs: 30, clock });
    const limiter = createTokenBucketLimiter({ name: "api", ratePerSecond: 1, burst: 1, store, failure: "open", clock });
    const d = limiter.take("k");
    clock.advance(30);
    assert.equal((await d).allowed, true);
    assert.equal(store.pending, 1);
  });

  test(`the options are validated (${runtime})`, () => {
    assert.throws(() => createRedisStore(undefined as never), /Cannot create redis store as the options must be an object/);
    assert.throws(() => createRedisStore({ client: {} as never }), /"client" must have a sendCommand\(args\) method/);
    assert.throws(() => createRedisStore({ client: fakeRedis().client, prefix: "p".repeat(65) }), /"prefix"/);
    assert.throws(() => createRedisStore({ client: fakeRedis().client, timeoutMs: 0 }), /"timeoutMs"/);
    // A misspelled option was ignored (a review): two apps meant apart shared the default prefix.
    assert.throws(() => createRedisStore({ client: fakeRedis().client, prefx: "app:" } as never), { name: "TypeError", message: 'Cannot create redis store as "prefx" is not an option (did you mean "prefix"?)' });
    const store = createRedisStore({ client: fakeRedis().client, name: "valkey" });
    assert.equal(store.name, "valkey");
    assert.equal(createFixedWindowLimiter({ name: "ip", store }).store, store);
  });
});
