// The store on a real Redis Cluster (three masters, no replicas, started here by PID) through
// node-redis's cluster client: fromNodeRedis refuses that client, fromNodeRedisCluster routes
// each check to its key's master with every key's budget exact, loads the scripts on every
// master (again after they were flushed), and a scoped call works with a hash-tagged prefix.
// And README's ACL line, run as written, is enough for the store.
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createClient, createCluster } from "redis";
import { createRedisStore } from "../../src/redis/store.ts";
import { fromNodeRedis, fromNodeRedisCluster } from "../../src/redis/client.ts";
import { createFixedWindowLimiter } from "../../src/core/limits/fixed_window.ts";
import { createTokenBucketLimiter } from "../../src/core/limits/token_bucket.ts";
import { createScopedLimiter } from "../../src/core/limits/scopes.ts";
import { startRedis, startRedisCluster, type RedisServer } from "../support/redis.ts";
import type { NodeRedisClient } from "../support/node_redis.ts";
import { runtime } from "../support/runtime.ts";

const TIMEOUT = { timeout: 30_000 };

describe(`redis store on a Redis Cluster (${runtime})`, () => {
  let nodes: RedisServer[] = [];
  let cluster: ReturnType<typeof createCluster>;
  // Formed on first use, inside a test's own timeout: a cluster takes a few seconds to agree on
  // its slots on a loaded machine, longer than a runner's hook timeout (Bun's is 5 s).
  let formed: Promise<void> | undefined;
  const ready = () =>
    (formed ??= (async () => {
      nodes = await startRedisCluster(3);
      cluster = createCluster({
        rootNodes: [{ url: nodes[0]!.url }],
        defaults: { disableOfflineQueue: true, socket: { reconnectStrategy: 25, connectTimeout: 2_000 } },
      });
      cluster.on("error", () => {});
      await cluster.connect();
    })());
  after(async () => {
    await cluster?.close().catch(() => {});
    await Promise.all(nodes.map((n) => n.stop()));
  });

  /** How many keys each master holds. */
  const keysPerMaster = async () => Promise.all(nodes.map(async (n) => Number(await n.command("DBSIZE"))));

  test(`fromNodeRedis refuses a cluster client, naming the binding for it (${runtime})`, TIMEOUT, async () => {
    await ready();
    assert.throws(() => fromNodeRedis(cluster as never), /cluster client \(createCluster\(\)\): bind it with fromNodeRedisCluster/);
  });

  test(`checks run on their key's master: every key's budget is exact, and the keys spread over the masters (${runtime})`, TIMEOUT, async () => {
    await ready();
    const store = createRedisStore({ client: fromNodeRedisCluster(cluster as never), timeoutMs: 2_000 });
    const window = createFixedWindowLimiter({ name: "spread-fw", limit: 3, windowMs: 60_000, store });
    const bucket = createTokenBucketLimiter({ name: "spread-tb", ratePerSecond: 0.01, burst: 2, store });
    const before = await keysPerMaster();
    for (let i = 0; i < 12; i++) {
      const key = `client-${i}`;
      const fw: string[] = [];
      for (let n = 0; n < 4; n++) fw.push((await window.take(key)).reason ?? "ok");
      assert.deepEqual(fw, ["ok", "ok", "ok", "over-limit"], key);
      const tb: string[] = [];
      for (let n = 0; n < 3; n++) tb.push((await bucket.take(key)).reason ?? "ok");
      assert.deepEqual(tb, ["ok", "ok", "over-limit"], key);
    }
    const added = (await keysPerMaster()).map((n, i) => n - before[i]!);
    assert.equal(added.reduce((a, b) => a + b, 0), 24, `keys added per master: ${added}`);
    assert.ok(added.filter((n) => n > 0).length >= 2, `all on one master: ${added}`);
  });

  test(`the scripts are loaded on every master, and again after every master lost them (${runtime})`, TIMEOUT, async () => {
    await ready();
    const store = createRedisStore({ client: fromNodeRedisCluster(cluster as never), timeoutMs: 2_000 });
    const limiter = createFixedWindowLimiter({ name: "reload", limit: 1_000, windowMs: 60_000, store });
    const take = async (n: number, tag: string) => (await Promise.all(Array.from({ length: n }, (_, i) => limiter.take(`${tag}-${i}`)))).map((d) => d.reason ?? "ok");
    assert.deepEqual(new Set(await take(30, "first")), new Set(["ok"]));
    // As a failover to fresh nodes would: no master has the script any more.
    for (const node of nodes) await node.command("SCRIPT", "FLUSH");
    assert.deepEqual(new Set(await take(30, "after")), new Set(["ok"]));
    const calls = await Promise.all(nodes.map((n) => n.commandCalls()));
    assert.ok(calls.every((c) => (c["script|load"] ?? c["script"] ?? 0) >= 2), `SCRIPT LOAD per master: ${JSON.stringify(calls.map((c) => c["script|load"] ?? c["script"]))}`);
  });

  test(`a scoped call over two shared limiters works with a hash-tagged prefix (${runtime})`, TIMEOUT, async () => {
    await ready();
    const store = createRedisStore({ client: fromNodeRedisCluster(cluster as never), prefix: "{scoped}:", timeoutMs: 2_000 });
    const global = createFixedWindowLimiter({ name: "global", limit: 100, windowMs: 60_000, store });
    const tenant = createFixedWindowLimiter({ name: "tenant", limit: 2, windowMs: 60_000, store });
    const scoped = createScopedLimiter<{ id: string }>({
      scopes: [{ name: "global", limiter: global, key: () => "all" }, { name: "tenant", limiter: tenant, key: (c) => c.id }],
    });
    const seen: string[] = [];
    for (const id of ["a", "a", "a", "b"]) seen.push((await scoped.take({ id })).reason ?? "ok");
    assert.deepEqual(seen, ["ok", "ok", "over-limit", "ok"]);
  });
});

// The ACL line README gives, run as written: a user allowed only it runs both algorithms.
describe(`redis store under README's ACL user (${runtime})`, () => {
  test(`the user README's ACL SETUSER line makes can run both scripts (${runtime})`, TIMEOUT, async () => {
    const line = /`(ACL SETUSER limits [^`]+)`/.exec(readFileSync(new URL("../../README.md", import.meta.url), "utf8"))?.[1];
    assert.ok(line !== undefined, "README has no ACL SETUSER line");
    const redis = await startRedis();
    let client: NodeRedisClient | undefined;
    try {
      assert.equal(await redis.command(...line.replace(">PASSWORD", ">s3cret").split(" ")), "OK");
      client = createClient({ url: `redis://limits:s3cret@127.0.0.1:${redis.port}`, disableOfflineQueue: true });
      client.on("error", () => {});
      await client.connect();
      const store = createRedisStore({ client: fromNodeRedis(client), timeoutMs: 2_000 });
      const window = createFixedWindowLimiter({ name: "acl", limit: 2, windowMs: 60_000, store });
      const bucket = createTokenBucketLimiter({ name: "acl", ratePerSecond: 0.01, burst: 2, store });
      const seen: string[] = [];
      for (let i = 0; i < 3; i++) seen.push((await window.take("u")).reason ?? "ok");
      for (let i = 0; i < 3; i++) seen.push((await bucket.take("u")).reason ?? "ok");
      assert.deepEqual(seen, ["ok", "ok", "over-limit", "ok", "ok", "over-limit"]);
      // The user is held to the prefix: a key outside it is refused.
      await assert.rejects(client.sendCommand(["GET", "elsewhere"]), /NOPERM/);
    } finally {
      client?.destroy();
      await redis.stop();
    }
  });
});
