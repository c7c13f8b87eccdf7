// Bun's built-in Redis client (Bun.RedisClient, through fromBunRedis) as the shared store's
// client, against a real redis-server: the same budget, the same NOSCRIPT reload, the same
// failure when Redis is gone. Bun only: Node and Deno have no such client (node-redis serves
// them, test/redis/failure.test.ts and model.test.ts).
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createFixedWindowLimiter } from "../../src/mod.ts";
import { createRedisStore, fromBunRedis, type BunRedisLike } from "../../src/redis/mod.ts";
import { startRedis, type RedisServer } from "../support/redis.ts";
import { openResp } from "../support/resp.ts";
import { runtime } from "../support/runtime.ts";
import { within } from "../support/reliability.ts";

type BunRedis = BunRedisLike & { connect(): Promise<void>; close(): void; readonly connected: boolean };
const RedisClient = (globalThis as { Bun?: { RedisClient?: new (url: string, options?: object) => BunRedis } }).Bun?.RedisClient;
const skip = RedisClient === undefined ? "Bun.RedisClient exists only on Bun" : false;

describe(`redis: Bun's built-in client as the store's client (${runtime})`, () => {
  let redis: RedisServer;
  const clients: BunRedis[] = [];
  const connect = async () => {
    const c = new RedisClient!(redis.url, { enableOfflineQueue: false, autoReconnect: true });
    await c.connect();
    clients.push(c);
    return c;
  };
  before(async () => {
    if (!skip) redis = await startRedis();
  });
  after(async () => {
    for (const c of clients) c.close();
    await redis?.stop();
  });

  test(`two clients, one budget: exactly the limit is admitted across them (${runtime})`, { skip }, async () => {
    const limiters = await Promise.all([0, 1].map(async () =>
      createFixedWindowLimiter({ name: "ip", limit: 7, windowMs: 60_000, store: createRedisStore({ client: fromBunRedis(await connect()), timeoutMs: 5_000 }) })
    ));
    const decisions = await within(Promise.all(Array.from({ length: 20 }, (_, i) => Promise.resolve(limiters[i % 2]!.take("10.0.0.1")))), "20 takes");
    assert.equal(decisions.filter((d) => d.allowed).length, 7);
    assert.ok(decisions.filter((d) => !d.allowed).every((d) => d.reason === "over-limit"));
  });

  test(`SCRIPT FLUSH → NOSCRIPT → the script is reloaded and the take answered (${runtime})`, { skip }, async () => {
    const limiter = createFixedWindowLimiter({ name: "api", limit: 3, windowMs: 60_000, store: createRedisStore({ client: fromBunRedis(await connect()), timeoutMs: 5_000 }), failure: "closed" });
    assert.equal((await limiter.take("k")).remaining, 2);
    await redis.command("SCRIPT", "FLUSH");
    const d = await within(Promise.resolve(limiter.take("k")), "the take after the flush");
    assert.deepEqual([d.allowed, d.remaining], [true, 1]);
  });

  test(`Redis killed: a take fails closed (no offline queue to wait in), and is answered by Redis again after the restart (${runtime})`, { skip }, async () => {
    const client = await connect();
    const limiter = createFixedWindowLimiter({ name: "down", limit: 100, windowMs: 60_000, store: createRedisStore({ client: fromBunRedis(client), timeoutMs: 5_000, fallbackAfter: 1_000_000 }), failure: "closed" });
    assert.equal((await limiter.take("k")).allowed, true);
    await redis.kill();
    const down = await within(Promise.resolve(limiter.take("k")), "a take while Redis is down");
    assert.deepEqual([down.allowed, down.reason], [false, "limiter-error"]);
    await redis.restart();
    let back = down;
    for (let i = 0; i < 200 && !back.allowed; i++) {
      await new Promise((r) => setTimeout(r, 25));
      back = await within(Promise.resolve(limiter.take("k")), "a take after the restart");
    }
    assert.deepEqual([back.allowed, back.remaining], [true, 99], "a fresh window in the restarted Redis");
  });

  test(`a client that gave up reconnecting (its reconnect failed authentication) is reconnected by the binding once Redis takes it again (${runtime})`, { skip, timeout: 30_000 }, async () => {
    const client = await connect();
    const limiter = createFixedWindowLimiter({ name: "auth", limit: 100, windowMs: 60_000, store: createRedisStore({ client: fromBunRedis(client), timeoutMs: 5_000, fallbackAfter: 1_000_000 }), failure: "closed" });
    assert.equal((await limiter.take("k")).allowed, true);
    const admin = await openResp(redis.port);
    try {
      // A password set and every client dropped: Bun's reconnect fails NOAUTH and it gives up.
      await admin.command("CONFIG", "SET", "requirepass", "rotated");
      await admin.command("CLIENT", "KILL", "TYPE", "normal"); // SKIPME yes: not this connection
      await new Promise((r) => setTimeout(r, 300)); // its reconnect is refused meanwhile
      await admin.command("CONFIG", "SET", "requirepass", "");
      const down = await within(Promise.resolve(limiter.take("k")), "a take after Bun's client gave up");
      assert.equal(down.allowed, false, "Bun's client does not come back by itself");
      let back = down;
      for (let i = 0; i < 100 && !back.allowed; i++) {
        await new Promise((r) => setTimeout(r, 100));
        back = await within(Promise.resolve(limiter.take("k")), "a take once Redis takes the client again");
      }
      assert.equal(back.allowed, true, "Bun's client was reconnected");
    } finally {
      await admin.command("CONFIG", "SET", "requirepass", "").catch(() => {});
      admin.close();
    }
  });
});
