// Two instances (two connections, two stores, two limiters of one name) sharing a real Redis
// answer a sequence of takes exactly as ONE in-memory limiter answers it: the shared budget is
// the in-memory budget, whichever instance a request reaches, denied-key caches included.
// Sequences are generated (fast-check), each within one window (60 s; a token bucket earning
// one unit per 100 s), so Redis's clock and the manual clock of the model agree on it.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { createFixedWindowLimiter, createTokenBucketLimiter, type RateDecision } from "../../src/mod.ts";
import { createRedisStore, fromNodeRedis } from "../../src/redis/mod.ts";
import { createManualClock } from "../../src/testing/mod.ts";
import { closeNodeRedis, connectNodeRedis, type NodeRedisClient } from "../support/node_redis.ts";
import { startRedis, type RedisServer } from "../support/redis.ts";
import { runtime } from "../support/runtime.ts";

const LIMIT = 6;
const op = fc.record({ instance: fc.integer({ min: 0, max: 1 }), key: fc.constantFrom("a", "b", "c"), cost: fc.integer({ min: 1, max: 3 }) });
const sequence = fc.array(op, { minLength: 1, maxLength: 30 });

describe(`redis: two instances sharing Redis answer as one in-memory limiter (${runtime})`, () => {
  let redis: RedisServer;
  const clients: NodeRedisClient[] = [];
  before(async () => {
    redis = await startRedis();
    clients.push(await connectNodeRedis(redis.url), await connectNodeRedis(redis.url));
  });
  after(async () => {
    for (const c of clients) closeNodeRedis(c);
    await redis?.stop();
  });

  let run = 0;
  /** One store per instance over its own connection, a fresh prefix per run. */
  const stores = () => {
    const prefix = `model${++run}:`;
    return clients.map((c) => createRedisStore({ client: fromNodeRedis(c), prefix, timeoutMs: 5_000, fallbackAfter: 1_000_000 }));
  };
  /**
   * What must agree: the verdict, why a denial denied, and what is left after an admission.
   * (What a denial reports as left is pinned by its own test below: the denied-key cache.)
   */
  const same = (d: RateDecision) => [d.allowed, d.allowed ? d.remaining : -1, d.allowed ? undefined : d.reason] as const;
  const expect = same;

  test(`fixed window: allowed and remaining equal the in-memory limiter's on every generated sequence (${runtime})`, { timeout: 60_000 }, async () => {
    await fc.assert(fc.asyncProperty(sequence, async (ops) => {
      const [s0, s1] = stores();
      const shared = [s0!, s1!].map((store) => createFixedWindowLimiter({ name: "ip", limit: LIMIT, windowMs: 60_000, store, failure: "closed" }));
      const model = createFixedWindowLimiter({ name: "ip", limit: LIMIT, windowMs: 60_000, clock: createManualClock() });
      for (const [i, { instance, key, cost }] of ops.entries()) {
        const got = await shared[instance]!.take(key, cost);
        const want = model.take(key, cost);
        assert.deepEqual(same(got), expect(want), `op ${i}: instance ${instance} take(${key}, ${cost})`);
      }
    }), { numRuns: 25 });
  });

  test(`token bucket (GCRA): allowed and remaining equal the in-memory limiter's on every generated sequence (${runtime})`, { timeout: 60_000 }, async () => {
    await fc.assert(fc.asyncProperty(sequence, async (ops) => {
      const [s0, s1] = stores();
      const shared = [s0!, s1!].map((store) => createTokenBucketLimiter({ name: "api", ratePerSecond: 0.01, burst: LIMIT, store, failure: "closed" }));
      const model = createTokenBucketLimiter({ name: "api", ratePerSecond: 0.01, burst: LIMIT, clock: createManualClock() });
      for (const [i, { instance, key, cost }] of ops.entries()) {
        const got = await shared[instance]!.take(key, cost);
        const want = model.take(key, cost);
        assert.deepEqual(same(got), expect(want), `op ${i}: instance ${instance} take(${key}, ${cost})`);
      }
    }), { numRuns: 25 });
  });

  // A denial answered from the denied-key cache reports what the key had left when the store
  // denied it (1 left, 2 asked), as Redis's own denial and the in-memory limiter do.
  test(`a denial answered from the denied-key cache reports what the key has left, as the in-memory limiter does (${runtime})`, { timeout: 30_000 }, async () => {
    const [store] = stores();
    const shared = createFixedWindowLimiter({ name: "ip", limit: LIMIT, windowMs: 60_000, store: store!, failure: "closed" });
    const model = createFixedWindowLimiter({ name: "ip", limit: LIMIT, windowMs: 60_000, clock: createManualClock() });
    const calls = async () => (await redis.commandCalls()).evalsha ?? 0;
    for (const cost of [1, 2, 2]) assert.equal((await shared.take("k", cost)).allowed, model.take("k", cost).allowed);
    const denied = await shared.take("k", 2); // Redis denies: 1 left, 2 asked
    assert.deepEqual([denied.allowed, denied.remaining], [false, model.take("k", 2).remaining]);
    const before = await calls();
    const cached = shared.take("k", 2); // the cache answers: no round-trip
    assert.ok(!(cached instanceof Promise));
    assert.equal(await calls(), before);
    assert.deepEqual([cached.allowed, cached.reason, cached.remaining], [false, "over-limit", model.take("k", 2).remaining]);
  });
});
