// The Lua scripts against a real redis-server (test/support/redis.ts starts one on a free
// loopback port): on any sequence of checks they answer exactly as the in-memory limiters
// do when given the server's time, charge scoped budgets all or nothing, and are timed by
// the server's clock, whatever the instances' own clocks read. Run through node-redis on
// every runtime, and through Bun's built-in client on Bun.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { createClient } from "redis";
import { createRedisStore } from "../../src/redis/store.ts";
import { fromBunRedis, fromNodeRedis, type RedisCommandClient } from "../../src/redis/client.ts";
import { createFixedWindowLimiter } from "../../src/core/limits/fixed_window.ts";
import { createTokenBucketLimiter } from "../../src/core/limits/token_bucket.ts";
import type { RateLimiter } from "../../src/core/limits/rate_limiter.ts";
import type { RateStore, RateStoreCheck, RateStoreReply } from "../../src/core/limits/rate_store.ts";
import type { Clock } from "../../src/core/clock.ts";
import { _keyHash } from "../../src/core/limits/_key_hash.ts";
import { startRedis, type RedisServer } from "../support/redis.ts";
import { runtime } from "../support/runtime.ts";

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** The clients this runtime can drive. */
async function clients(url: string): Promise<{ name: string; client: RedisCommandClient; close(): Promise<unknown> | unknown }[]> {
  const node = createClient({ url, disableOfflineQueue: true });
  node.on("error", () => {});
  await node.connect();
  const list: { name: string; client: RedisCommandClient; close(): Promise<unknown> | unknown }[] = [
    { name: "node-redis", client: fromNodeRedis(node), close: () => node.destroy() },
  ];
  const Bun = (globalThis as { Bun?: { RedisClient: new (url: string, o?: object) => { send(c: string, a: string[]): Promise<unknown>; connect(): Promise<void>; close(): void } } }).Bun;
  if (Bun !== undefined) {
    const bun = new Bun.RedisClient(url, { enableOfflineQueue: false });
    await bun.connect();
    list.push({ name: "Bun.RedisClient", client: fromBunRedis(bun), close: () => bun.close() });
  }
  return list;
}

type Spec = { kind: "fw"; limit: number; windowMs: number } | { kind: "tb"; ratePerSecond: number; burst: number };

const memory = (s: Spec): RateLimiter =>
  s.kind === "fw"
    ? createFixedWindowLimiter({ limit: s.limit, windowMs: s.windowMs, maxKeys: 1_000 })
    : createTokenBucketLimiter({ ratePerSecond: s.ratePerSecond, burst: s.burst, maxKeys: 1_000 });

const check = (s: Spec, name: string, key: string, cost: number): RateStoreCheck => {
  if (s.kind === "fw") return { algorithm: "fixed-window", limiter: name, key, cost, limit: s.limit, windowMs: s.windowMs, intervalMs: s.windowMs };
  const interval = 1000 / s.ratePerSecond;
  return { algorithm: "token-bucket", limiter: name, key, cost, limit: s.burst, windowMs: s.burst * interval, intervalMs: interval };
};

const specArb: fc.Arbitrary<Spec> = fc.oneof(
  fc.record({ kind: fc.constant("fw" as const), limit: fc.integer({ min: 1, max: 5 }), windowMs: fc.integer({ min: 3, max: 30 }) }),
  fc.record({ kind: fc.constant("tb" as const), ratePerSecond: fc.constantFrom(50, 100, 300, 333, 1000 / 7), burst: fc.integer({ min: 1, max: 5 }) }),
);

const limitOf = (s: Spec) => (s.kind === "fw" ? s.limit : s.burst);

describe(`redis scripts against a real redis-server (${runtime})`, () => {
  let redis: RedisServer;
  let list: Awaited<ReturnType<typeof clients>> = [];
  let run = 0;
  before(async () => {
    redis = await startRedis();
    list = await clients(redis.url);
  });
  after(async () => {
    for (const c of list) await c.close();
    await redis?.stop();
  });

  const storeFor = (client: RedisCommandClient): RateStore =>
    // A generous timeout: these tests check answers, not speed, on a loaded machine.
    createRedisStore({ client, prefix: `t${run++}:`, timeoutMs: 10_000 });

  test(`any sequence of scoped checks answers as the in-memory limiters at the server's time (${runtime})`, async () => {
    for (const { name, client } of list) {
      await fc.assert(
        fc.asyncProperty(
          fc.array(specArb, { minLength: 1, maxLength: 3 }),
          fc.array(
            fc.record({ keys: fc.array(fc.constantFrom("a", "b", "c"), { minLength: 3, maxLength: 3 }), cost: fc.integer({ min: 1, max: 5 }), pause: fc.constantFrom(0, 0, 0, 1, 4, 12) }),
            { minLength: 1, maxLength: 25 },
          ),
          async (specs, ops) => {
            const store = storeFor(client);
            const models = specs.map(memory);
            for (const op of ops) {
              if (op.pause > 0) await sleep(op.pause);
              const cost = Math.min(op.cost, ...specs.map(limitOf));
              const checks = specs.map((s, i) => check(s, `s${i}`, op.keys[i]!, cost));
              const answer = await store.call(checks);
              assert.ok("results" in answer, `${name}: ${JSON.stringify(answer)}`);
              const { now, results } = answer as RateStoreReply;
              // The in-memory model at the same time: peek every scope; charge all only if all admit.
              const peeks = models.map((m, i) => m.peek(op.keys[i]!, cost, now));
              const expected = peeks.every((d) => d.allowed) ? models.map((m, i) => m.take(op.keys[i]!, cost, now)) : peeks;
              assert.deepEqual(
                results,
                expected.map((d) => ({ allowed: d.allowed, retryAfterMs: d.retryAfterMs, remaining: d.remaining, resetMs: d.resetMs })),
                `${name} at ${now}`,
              );
            }
          },
        ),
        { numRuns: 25 },
      );
    }
  });

  test(`instances whose clocks disagree by hours share one budget, timed by the server (${runtime})`, async () => {
    for (const { name, client } of list) {
      const store = storeFor(client);
      const skewed = (offset: number): Clock => ({ now: () => performance.now() + offset, setTimeout, setInterval } as unknown as Clock);
      const make = (offset: number) => createFixedWindowLimiter({ name: "ip", limit: 3, windowMs: 60_000, store, clock: skewed(offset) });
      const a = make(3_600_000);
      const b = make(-3_600_000);
      const answers = [await a.take("k"), await b.take("k"), await a.take("k"), await b.take("k"), await a.take("k")];
      assert.deepEqual(answers.map((d) => d.allowed), [true, true, true, false, false], name);
      assert.ok(answers[3]!.retryAfterMs > 0 && answers[3]!.retryAfterMs <= 60_000, name);
      const reply = (await store.call([check({ kind: "fw", limit: 3, windowMs: 60_000 }, "ip", "other", 1)])) as RateStoreReply;
      // The server's TIME is wall-clock epoch milliseconds, not either instance's monotonic clock.
      assert.ok(Math.abs(reply.now - Date.now()) < 3_600_000, `${name}: ${reply.now}`);
    }
  });

  test(`two instances checking at once admit exactly the shared limit between them (${runtime})`, async () => {
    for (const { name, client } of list) {
      const other = createClient({ url: redis.url, disableOfflineQueue: true });
      other.on("error", () => {});
      await other.connect();
      try {
        const prefix = `t${run++}:`;
        // Two instances: their own client, store and limiter, one budget by name.
        const make = (c: RedisCommandClient) =>
          createTokenBucketLimiter({ name: "api", ratePerSecond: 0.001, burst: 20, store: createRedisStore({ client: c, prefix, timeoutMs: 10_000, maxPending: 1_000 }) });
        const a = make(client);
        const b = make(fromNodeRedis(other));
        const answers = await Promise.all(Array.from({ length: 60 }, (_, i) => (i % 2 === 0 ? a : b).take(`k`)));
        assert.equal(answers.filter((d) => d.allowed).length, 20, name);
        assert.equal(answers.filter((d) => !d.allowed && d.reason === "over-limit").length, 40, name);
      } finally {
        await other.destroy();
      }
    }
  });

  test(`keys expire with their budget: a window's at its end, a bucket's when full again (${runtime})`, async () => {
    for (const { name, client } of list) {
      const store = storeFor(client);
      await store.call([check({ kind: "fw", limit: 5, windowMs: 60_000 }, "ip", "k", 1), check({ kind: "tb", ratePerSecond: 1, burst: 10 }, "api", "k", 4)]);
      const keys = (await redis.command("KEYS", `t${run - 1}:*`)) as string[];
      assert.equal(keys.length, 2, name);
      for (const key of keys) {
        const ttl = Number(await redis.command("PTTL", key));
        // fixed window: 60 s (+ a 1 s margin); token bucket: 4 units at 1/s = 4 s (+ 1 s).
        const expected = key.includes(":fw:") ? 61_000 : 5_000;
        assert.ok(ttl > expected - 2_000 && ttl <= expected, `${name} ${key} ${ttl}`);
      }
    }
  });

  // A review: a bucket refilling over 1e17 ms made the Lua print its expiry "1e+17", which
  // Redis refused, and every take failed; such buckets are refused at creation, and the
  // longest allowed (1e12 ms) is written as an integer.
  test(`a bucket refilling over the longest allowed time (1e12 ms) is stored, and its first take admitted (${runtime})`, async () => {
    for (const { name, client } of list) {
      const store = storeFor(client);
      const bucket = createTokenBucketLimiter({ name: "slow", ratePerSecond: 1e-9, burst: 1, store, failure: "closed" });
      const first = await bucket.take("k");
      assert.equal(first.allowed, true, `${name}: ${JSON.stringify(first)}`);
      assert.equal((await bucket.take("k")).allowed, false, name);
      const [key] = (await redis.command("KEYS", `t${run - 1}:*`)) as string[];
      assert.ok(Number(await redis.command("PTTL", key!)) > 9e11, name);
    }
  });

  // A review: TIME is the server's wall clock. Stepped back an hour (NTP, a VM restore, a
  // failover to a replica behind), a window started "later" never ended and a bucket's stored
  // time stayed ahead: every active key got 429 for the hour, its expiry pushed back as far.
  test(`state stored in the server's future (its clock went back) is a budget come back, not a lockout (${runtime})`, async () => {
    for (const { name, client } of list) {
      const store = storeFor(client);
      const prefix = `t${run - 1}:`;
      const windowed = createFixedWindowLimiter({ name: "ip", limit: 2, windowMs: 60_000, store });
      const bucket = createTokenBucketLimiter({ name: "api", ratePerSecond: 1, burst: 2, store });
      assert.equal((await windowed.take("k")).allowed, true, name);
      assert.equal((await bucket.take("k")).allowed, true, name);
      const [sec, usec] = (await redis.command("TIME")) as [string, string];
      const ahead = Number(sec) * 1000 + Number(usec) / 1000 + 3_600_000;
      const keys = (await redis.command("KEYS", `${prefix}*`)) as string[];
      assert.equal(keys.length, 2, name);
      for (const key of keys) {
        // What the keys hold once the clock has gone back an hour: spent, and dated ahead.
        if (key.includes(":fw:")) {
          await redis.command("HSET", key, "s", String(ahead), "c", "2");
          await redis.command("PEXPIRE", key, "3661000");
        } else await redis.command("SET", key, String(ahead), "PX", "3602000");
      }
      const w = await windowed.take("k");
      const b = await bucket.take("k");
      assert.deepEqual([w.allowed, b.allowed], [true, true], `${name}: ${JSON.stringify([w, b])}`);
      for (const key of keys) {
        // Rewritten at the server's time: the window's expiry is its own again, the bucket's its refill.
        const ttl = Number(await redis.command("PTTL", key));
        assert.ok(ttl > 0 && ttl <= (key.includes(":fw:") ? 61_000 : 2_000), `${name} ${key} ${ttl}`);
      }
    }
  });

  // The shared-limits review: an unreadable entry raised an error in the script, every call of
  // that key failed for good (no expiry), and a client that was most of the traffic held the
  // store in its fallback for every client.
  test(`an entry that cannot be read (another type under its name, a field that is no number) is as none: admitted and written afresh (${runtime})`, async () => {
    for (const { name, client } of list) {
      const store = storeFor(client);
      const prefix = `t${run - 1}:`;
      const windowed = createFixedWindowLimiter({ name: "ip", limit: 2, windowMs: 60_000, store });
      const bucket = createTokenBucketLimiter({ name: "api", ratePerSecond: 1, burst: 2, store });
      const [sec, usec] = (await redis.command("TIME")) as [string, string];
      const serverMs = Number(sec) * 1000 + Number(usec) / 1000;
      const spoil: [string, string[]][] = [
        [`${prefix}fw:ip:${_keyHash("a")}`, ["SET", "x"]],
        [`${prefix}fw:ip:${_keyHash("b")}`, ["HSET", "s", "x", "c", "y"]],
        // A count Lua reads but HINCRBY does not, in a window still open (the server's time now):
        // it failed at the charge, after the call's other budgets were charged.
        [`${prefix}fw:ip:${_keyHash("c")}`, ["HSET", "s", String(serverMs), "c", "1.5"]],
        [`${prefix}tb:api:${_keyHash("a")}`, ["HSET", "s", "1"]],
        [`${prefix}tb:api:${_keyHash("b")}`, ["SET", "not a number"]],
      ];
      for (const [key, [command, ...args]] of spoil) await redis.command(command!, key, ...args);
      for (const key of ["a", "b"]) {
        const w = await windowed.take(key);
        const b = await bucket.take(key);
        assert.deepEqual([w.allowed, w.remaining, w.reason, b.allowed, b.remaining, b.reason], [true, 1, undefined, true, 1, undefined], `${name} ${key}: ${JSON.stringify([w, b])}`);
      }
      // "c": its count must be read as none, not HINCRBY'd; taken with another budget in one call.
      const both = await store.call([
        { algorithm: "fixed-window", limiter: "ip", key: "c", cost: 1, limit: 2, windowMs: 60_000, intervalMs: 60_000 },
        { algorithm: "fixed-window", limiter: "ip", key: "d", cost: 1, limit: 2, windowMs: 60_000, intervalMs: 60_000 },
      ]);
      assert.ok("results" in both, `${name}: ${JSON.stringify(both)}`);
      assert.deepEqual((both as RateStoreReply).results.map((r) => r.allowed), [true, true], name);
      for (const [key] of spoil) assert.equal(await redis.command("TYPE", key), key.includes(":fw:") ? "hash" : "string", `${name} ${key}`);
      assert.equal(store.state, "ok");
      // And counted from there.
      assert.deepEqual([(await windowed.take("a")).remaining, (await windowed.take("a")).allowed], [0, false], name);
    }
  });

  test(`a flushed script cache is reloaded on NOSCRIPT and the call still answers (${runtime})`, async () => {
    for (const { name, client } of list) {
      const store = storeFor(client);
      const limiter = createTokenBucketLimiter({ name: "api", ratePerSecond: 1, burst: 2, store });
      assert.equal((await limiter.take("k")).allowed, true);
      const loadsBefore = (await redis.commandCalls())["script|load"] ?? 0;
      await redis.command("SCRIPT", "FLUSH");
      assert.equal((await limiter.take("k")).allowed, true, name);
      assert.equal((await limiter.take("k")).allowed, false, name);
      assert.equal(((await redis.commandCalls())["script|load"] ?? 0) - loadsBefore, 1, name);
      assert.equal(store.state, "ok");
    }
  });
});
