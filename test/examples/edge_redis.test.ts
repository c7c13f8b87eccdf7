// The example edge server with HYGIENE_REDIS_URL: the per-IP window shared by every instance
// through a real Redis (test/support/redis.ts), and its startup errors.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { ConfigError, readEdgeConfig, redactUrl } from "../../examples/edge/config.ts";
import { freePort, startRedis, type RedisServer } from "../support/redis.ts";
import { type Child, runtime, startChild } from "../support/runtime.ts";
import { within } from "../support/reliability.ts";

const BASE_ENV = {
  PORT: "0",
  HOST: "127.0.0.1",
  HYGIENE_DRAIN_TIMEOUT_MS: "5000",
  HYGIENE_REQUEST_TIMEOUT_MS: "4000",
  // The load monitor has its own tests; here it would only make a busy CI box shed.
  HYGIENE_LOAD_MONITOR: "off",
};


/** What a child said, without the entry's "starting" line. */
const withoutStarting = (out: string): string => out.split("\n").filter((line) => line.trim() !== "" && !line.includes('"msg":"starting"')).join("\n");
describe(`examples: edge server with a shared per-IP limit (${runtime})`, () => {
  let redis: RedisServer;
  const children: Child[] = [];
  before(async () => {
    redis = await startRedis();
  });
  after(async () => {
    for (const c of children.splice(0)) c.kill();
    await redis?.stop();
  });

  test(`edge server: two instances with HYGIENE_REDIS_URL share one per-IP budget (${runtime})`, { timeout: 60_000 }, async () => {
    // A generous store timeout: on a loaded test machine the default 50 ms could fail a call
    // closed (a 429 that is not the limit's); the failure paths have their own tests.
    const env = { ...BASE_ENV, HYGIENE_REDIS_URL: redis.url, HYGIENE_RATE_LIMIT: "10", HYGIENE_REDIS_INSTANCES: "2", HYGIENE_REDIS_TIMEOUT_MS: "2000" };
    const a = startChild("examples/edge-server.ts", env);
    const b = startChild("examples/edge-server.ts", env);
    children.push(a, b);
    const [la, lb] = await Promise.all([a.waitForLine(/"listening"/), b.waitForLine(/"listening"/)]).then((ls) => ls.map((l) => JSON.parse(l)));
    assert.equal(la.rateStore, "redis");
    assert.equal(la.config.redisInstances, 2);
    assert.equal(la.config.redisTimeoutMs, 2000);
    const statuses: number[] = [];
    // Alternate between the instances: 30 requests from one client, 10 allowed in all.
    for (let i = 0; i < 30; i++) {
      const res = await within(fetch(`http://127.0.0.1:${(i % 2 ? la : lb).port}/`), "a request");
      await res.arrayBuffer();
      statuses.push(res.status);
    }
    assert.equal(statuses.filter((s) => s === 200).length, 10, `statuses: ${statuses.join(",")}`);
    assert.equal(statuses.filter((s) => s === 429).length, 20);
    for (const c of [a, b]) {
      c.kill("SIGTERM");
      assert.equal(await within(c.exited, "the drain"), 0, c.stdout() + c.stderr());
    }
  });

  test(`edge server: a HYGIENE_REDIS_URL that is no redis:// URL exits 2 with one line naming it, password hidden (${runtime})`, async () => {
    const child = startChild("examples/edge-server.ts", { ...BASE_ENV, HYGIENE_REDIS_URL: "http://user:s3cret@127.0.0.1:6379" });
    children.push(child);
    assert.equal(await within(child.exited, "the exit"), 2);
    // Besides the entry's "starting" line (printed before the configuration is read).
    const said = withoutStarting(child.stderr() + child.stdout());
    assert.equal(said.split("\n").length, 1, said);
    assert.match(said, /HYGIENE_REDIS_URL must be a redis:\/\/ or rediss:\/\/ URL/);
    assert.doesNotMatch(said, /s3cret/);
  });

  test(`edge server: a Redis that does not answer at startup exits 1 with one error line naming HYGIENE_REDIS_URL, after the line saying it connects (${runtime})`, { timeout: 30_000 }, async () => {
    const nobody = await freePort();
    const child = startChild("examples/edge-server.ts", { ...BASE_ENV, HYGIENE_REDIS_URL: `redis://:hunter2@127.0.0.1:${nobody}` });
    children.push(child);
    assert.equal(await within(child.exited, "the exit", 20_000), 1);
    const said = withoutStarting(child.stderr() + child.stdout());
    const lines = said.split("\n").map((line) => JSON.parse(line) as { level: string; msg: string });
    assert.deepEqual(lines.map((l) => [l.level, l.msg]).sort(), [["error", "shared store unreachable"], ["info", "connecting to the shared store"]], said);
    assert.match(said, /"variable":"HYGIENE_REDIS_URL"/);
    assert.doesNotMatch(said, /hunter2/);
  });

  test("edge server config: HYGIENE_REDIS_URL, HYGIENE_REDIS_FAILURE and HYGIENE_REDIS_INSTANCES are read and checked", () => {
    const none = readEdgeConfig({});
    assert.deepEqual([none.redisUrl, none.redisFailure, none.redisInstances, none.redisTimeoutMs], [undefined, "closed", 1, 50]);
    const set = readEdgeConfig({ HYGIENE_REDIS_URL: "rediss://user:pw@cache.internal:6380/0", HYGIENE_REDIS_FAILURE: "open", HYGIENE_REDIS_INSTANCES: "4" });
    assert.deepEqual([set.redisUrl, set.redisFailure, set.redisInstances], ["rediss://user:pw@cache.internal:6380/0", "open", 4]);
    for (const [name, value] of [["HYGIENE_REDIS_URL", "127.0.0.1:6379"], ["HYGIENE_REDIS_URL", "redis://"], ["HYGIENE_REDIS_URL", "http://h"], ["HYGIENE_REDIS_FAILURE", "maybe"], ["HYGIENE_REDIS_INSTANCES", "0"], ["HYGIENE_REDIS_TIMEOUT_MS", "0"]]) {
      assert.throws(() => readEdgeConfig({ [name!]: value }), (e: unknown) => e instanceof ConfigError && e.variable === name, `${name}=${value}`);
    }
    assert.equal(redactUrl("redis://user:pw@h:1"), "redis://user:***@h:1");
    assert.equal(redactUrl("redis://h:1"), "redis://h:1");
  });
});
