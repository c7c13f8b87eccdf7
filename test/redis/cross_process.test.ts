// Two real server processes, each serve() with the per-IP fixed window shared through one
// real Redis: between them they admit exactly the shared limit, whichever instance a request
// reaches, and each instance alone would have admitted it in full.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { startRedis, type RedisServer } from "../support/redis.ts";
import { type Child, runtime, startChild } from "../support/runtime.ts";
import { BOUND_MS, within } from "../support/reliability.ts";

const FIXTURE = "test/fixtures/shared_limit_server.ts";

interface Instance {
  child: Child;
  port: number;
}

async function startInstance(env: Record<string, string>): Promise<Instance> {
  const child = startChild(FIXTURE, env);
  try {
    const { port } = JSON.parse(await child.waitForLine(/"listening":true/, BOUND_MS)) as { port: number };
    return { child, port };
  } catch (error) {
    child.kill();
    throw error;
  }
}

/** `count` GETs to `port`, `width` at a time; resolves with the statuses. */
async function hammer(port: number, count: number, width: number): Promise<number[]> {
  const statuses: number[] = [];
  let sent = 0;
  const worker = async () => {
    while (sent < count) {
      sent++;
      const res = await fetch(`http://127.0.0.1:${port}/`);
      await res.arrayBuffer();
      statuses.push(res.status);
    }
  };
  await Promise.all(Array.from({ length: width }, worker));
  return statuses;
}

const tally = (statuses: number[]) => statuses.reduce<Record<number, number>>((t, s) => ((t[s] = (t[s] ?? 0) + 1), t), {});

describe(`redis: limits shared across server processes (${runtime})`, () => {
  let redis: RedisServer;
  const instances: Instance[] = [];
  before(async () => {
    redis = await startRedis();
  });
  after(async () => {
    for (const i of instances.splice(0)) i.child.kill();
    await redis?.stop();
  });

  test(`two instances on one Redis admit exactly the shared limit between them (${runtime})`, { timeout: 60_000 }, async () => {
    const LIMIT = 25;
    const env = { REDIS_URL: redis.url, LIMIT: String(LIMIT) };
    const [a, b] = await Promise.all([startInstance(env), startInstance(env)]);
    instances.push(a!, b!);
    // Each instance alone gets more than the whole limit, both at once, several in flight.
    const [fromA, fromB] = await within(Promise.all([hammer(a!.port, 2 * LIMIT, 4), hammer(b!.port, 2 * LIMIT, 4)]), "the requests", 30_000);
    const all = tally([...fromA!, ...fromB!]);
    assert.deepEqual(all, { 200: LIMIT, 429: 3 * LIMIT }, `statuses across both instances: ${JSON.stringify(all)}`);
    // The budget lives in Redis: one window, one key, whichever instance counted.
    const keys = (await redis.command("KEYS", "hygiene:*")) as string[];
    assert.equal(keys.length, 1, `one shared window key: ${JSON.stringify(keys)}`);
    assert.match(keys[0]!, /^hygiene:fw:ip:/);
    assert.ok(!keys[0]!.includes("127.0.0.1"), "the client key is hashed, never used raw");
  });

  test(`a third instance started later joins the budget already spent (${runtime})`, { timeout: 60_000 }, async () => {
    const LIMIT = 25;
    const env = { REDIS_URL: redis.url, LIMIT: String(LIMIT) };
    const late = await startInstance(env);
    instances.push(late);
    const statuses = await within(hammer(late.port, 5, 1), "the requests");
    assert.deepEqual(tally(statuses), { 429: 5 }, "the window the first two spent is still spent");
  });
});
