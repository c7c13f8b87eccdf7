// A shared limiter whose Redis dies, comes back, restarts empty or stalls — each against a
// real redis-server (test/support/redis.ts) and the node-redis client: every request is
// answered (open or closed as configured), the breaker falls back to the insurance limiter
// and recovers, scripts are reloaded after a restart, and a stalled Redis never accumulates
// more calls than the store's bound.
import { after, afterEach, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createFixedWindowLimiter, type HygieneEvent, type RateDecision, type ServeHandle } from "../../src/mod.ts";
import { createRedisStore, fromNodeRedis } from "../../src/redis/mod.ts";
import { createManualClock } from "../../src/testing/mod.ts";
import { serveHere } from "../support/adapter.ts";
import { closeNodeRedis, connectNodeRedis, type NodeRedisClient } from "../support/node_redis.ts";
import { startRedis, type RedisServer } from "../support/redis.ts";
import { openResp } from "../support/resp.ts";
import { runtime } from "../support/runtime.ts";
import { waitUntil, within } from "../support/reliability.ts";

const NO_BREAKER = 1_000_000;

describe(`redis: a shared limiter when Redis fails (${runtime})`, () => {
  let redis: RedisServer;
  let client: NodeRedisClient | undefined;
  let handle: ServeHandle | undefined;
  before(async () => {
    redis = await startRedis();
  });
  afterEach(async () => {
    await handle?.shutdown().catch(() => {});
    handle = undefined;
    closeNodeRedis(client);
    client = undefined;
    if (!redis.running()) await redis.restart();
    await redis.command("FLUSHALL");
  });
  after(() => redis?.stop());

  for (const failure of ["closed", "open"] as const) {
    test(`killed mid-load: every request is answered, ${failure === "closed" ? "429" : "200"} while Redis is down, 200 again once it returns (fail ${failure}) (${runtime})`, { timeout: 60_000 }, async () => {
      client = await connectNodeRedis(redis.url);
      // A generous timeout: a loaded machine must not turn a slow answer into a failure while
      // Redis is up; while it is down the client refuses at once (no offline queue).
      const store = createRedisStore({ client: fromNodeRedis(client), timeoutMs: 5_000, fallbackAfter: NO_BREAKER });
      const limiter = createFixedWindowLimiter({ name: "ip", limit: 1_000_000, windowMs: 60_000, store, failure });
      handle = await serveHere(() => new Response("ok"), { hostname: "127.0.0.1", rateLimits: [{ limiter, scope: "ip" }] });
      const url = `http://127.0.0.1:${handle.address.port}/`;

      // A request is classed by its phase only when it was sent and answered within it; those
      // that straddle a change (or were sent while "killing" or "restarting") are answered, not classed.
      let phase = "up";
      const answers: { phase: string; status: number | string; retryAfter: string | null }[] = [];
      let running = true;
      const worker = async () => {
        while (running) {
          const sentIn = phase;
          try {
            const res = await within(fetch(url), "a request");
            await res.arrayBuffer();
            answers.push({ phase: sentIn === phase ? sentIn : "straddling", status: res.status, retryAfter: res.headers.get("retry-after") });
          } catch (error) {
            answers.push({ phase: sentIn, status: String(error), retryAfter: null });
          }
        }
      };
      const load = Promise.all(Array.from({ length: 4 }, worker));
      const inPhase = (p: string) => answers.filter((a) => a.phase === p);
      try {
        await waitUntil(() => inPhase("up").length >= 20, () => "20 answers before the kill");
        phase = "killing";
        await redis.kill();
        phase = "down";
        await waitUntil(() => inPhase("down").length >= 20, () => "20 answers while Redis is down");
        phase = "restarting";
        await redis.restart();
        phase = "recovering";
        await waitUntil(() => inPhase("recovering").some((a) => a.status === 200), () => "a 200 once Redis is back");
        phase = "back";
        await waitUntil(() => inPhase("back").length >= 20, () => "20 answers after the recovery");
      } finally {
        running = false;
        await load;
      }
      const statuses = (p: string) => [...new Set(inPhase(p).map((a) => a.status))];
      assert.deepEqual(answers.filter((a) => typeof a.status === "string"), [], "every request was answered");
      const seq = answers.map((a) => `${a.phase}:${a.status}`).join(" ");
      assert.deepEqual(statuses("up"), [200], seq);
      assert.deepEqual(statuses("down"), [failure === "closed" ? 429 : 200], `while Redis was down (fail ${failure}): ${seq}`);
      if (failure === "closed") assert.ok(inPhase("down").every((a) => a.retryAfter !== null), "a fail-closed 429 says when to retry");
      assert.deepEqual(statuses("back"), [200], seq);
      assert.ok(store.pending <= store.maxPending);
    });
  }

  test(`after repeated failures the insurance limiter answers (limit ÷ instances), and a half-open probe recovers (${runtime})`, { timeout: 30_000 }, async () => {
    client = await connectNodeRedis(redis.url);
    const clock = createManualClock();
    const events: HygieneEvent[] = [];
    const store = createRedisStore({ client: fromNodeRedis(client), timeoutMs: 5_000, fallbackAfter: 3, probeIntervalMs: 1_000, clock, onEvent: (e) => events.push(e) });
    const limiter = createFixedWindowLimiter({ name: "api", limit: 10, windowMs: 60_000, store, failure: "closed", expectedInstances: 2 });
    const take = async (): Promise<RateDecision> => await within(Promise.resolve(limiter.take("tenant")), "a take");

    assert.equal((await take()).allowed, true, "Redis answers");
    await redis.kill();
    // Three failures (the client refuses at once: no offline queue) open the breaker: the
    // first two take the failure mode, the third — the one that tipped it — the insurance.
    for (let i = 0; i < 2; i++) {
      const d = await take();
      assert.deepEqual([d.allowed, d.reason], [false, "limiter-error"], `failure ${i + 1} fails closed`);
    }
    assert.equal((await take()).allowed, true, "the failure that opened the breaker is answered by the insurance limiter");
    assert.equal(store.state, "fallback");
    assert.deepEqual(events.map((e) => e.type === "store" && e.state), ["fallback"]);
    // The insurance limiter: 10 ÷ 2 instances = 5 a window (1 spent above), answered without a call.
    const insured = Array.from({ length: 8 }, () => limiter.take("tenant"));
    assert.ok(insured.every((d) => !(d instanceof Promise)), "no call is made while the breaker is open");
    assert.deepEqual(insured.map((d) => (d as RateDecision).allowed), [true, true, true, true, false, false, false, false]);

    await redis.restart();
    await waitUntil(() => client!.isReady, () => "the client reconnected");
    assert.equal(store.state, "fallback", "a reconnect alone does not close the breaker");
    clock.advance(1_000); // the probe interval: the next take is the half-open probe
    const probe = await take();
    assert.equal(probe.allowed, true, "the probe reached the restarted Redis (an empty window)");
    assert.equal(store.state, "ok");
    assert.deepEqual(events.map((e) => e.type === "store" && e.state), ["fallback", "recovered"]);
    const evalsBefore = (await redis.commandCalls()).evalsha ?? 0;
    assert.equal((await take()).allowed, true);
    assert.equal(((await redis.commandCalls()).evalsha ?? 0) - evalsBefore, 1, "after the recovery each take is one EVALSHA again");
  });

  test(`after a restart (empty script cache) the script is reloaded on NOSCRIPT and the take is answered by Redis (${runtime})`, { timeout: 30_000 }, async () => {
    client = await connectNodeRedis(redis.url);
    const store = createRedisStore({ client: fromNodeRedis(client), timeoutMs: 5_000, fallbackAfter: NO_BREAKER });
    const limiter = createFixedWindowLimiter({ name: "ip", limit: 3, windowMs: 60_000, store, failure: "closed" });
    assert.equal((await limiter.take("k")).allowed, true);
    await redis.restart();
    await waitUntil(() => client!.isReady, () => "the client reconnected");
    const d = await within(Promise.resolve(limiter.take("k")), "the take after the restart");
    assert.deepEqual([d.allowed, d.remaining], [true, 2], "a fresh window in the restarted Redis, counted there");
    const calls = await redis.commandCalls();
    assert.equal(calls.evalsha, 2, `one EVALSHA answered NOSCRIPT, the second ran: ${JSON.stringify(calls)}`);
    assert.equal(calls["script|load"], 1, "the script was loaded once");
  });

  test(`SCRIPT FLUSH (as Redis 8 and Valkey evict scripts) → NOSCRIPT → reloaded once for concurrent takes, counts intact (${runtime})`, { timeout: 30_000 }, async () => {
    client = await connectNodeRedis(redis.url);
    const store = createRedisStore({ client: fromNodeRedis(client), timeoutMs: 5_000, fallbackAfter: NO_BREAKER });
    const limiter = createFixedWindowLimiter({ name: "ip", limit: 10, windowMs: 60_000, store, failure: "closed" });
    assert.equal((await limiter.take("k")).allowed, true);
    await redis.command("SCRIPT", "FLUSH");
    const before = await redis.commandCalls();
    const ds = await within(Promise.all(Array.from({ length: 5 }, () => Promise.resolve(limiter.take("k")))), "five takes");
    assert.ok(ds.every((d) => d.allowed));
    assert.deepEqual(ds.map((d) => d.remaining).sort(), [4, 5, 6, 7, 8], "each take counted once in the same window");
    const after = await redis.commandCalls();
    assert.equal((after["script|load"] ?? 0) - (before["script|load"] ?? 0), 1, "concurrent NOSCRIPTs reload once");
  });

  test(`a stalled Redis (DEBUG SLEEP from a second connection): takes fail at the timeout, calls outstanding never pass maxPending, then it recovers (${runtime})`, { timeout: 30_000 }, async () => {
    client = await connectNodeRedis(redis.url);
    const store = createRedisStore({ client: fromNodeRedis(client), timeoutMs: 100, maxPending: 8, fallbackAfter: NO_BREAKER });
    const limiter = createFixedWindowLimiter({ name: "ip", limit: 1_000_000, windowMs: 60_000, store, failure: "closed" });
    // 100 ms is short on a loaded machine: wait for one answered take rather than assume it.
    await waitUntil(async () => (await limiter.take("k")).allowed, () => "a take answered by Redis");
    const side = await openResp(redis.port);
    try {
      const asleep = side.command("DEBUG", "SLEEP", "2");
      // Until a take times out, Redis may not have started sleeping yet.
      await waitUntil(async () => (await limiter.take("k")).reason === "limiter-error", () => "a take that timed out");
      let maxSeen = store.pending;
      // A burst in one synchronous turn: no reply can arrive meanwhile, so the bound is exact.
      const burst = Array.from({ length: 50 }, () => {
        const d = limiter.take("k");
        maxSeen = Math.max(maxSeen, store.pending);
        return d;
      });
      assert.ok(maxSeen <= 8, `calls outstanding ${maxSeen} > maxPending 8`);
      const atOnce = burst.filter((d): d is RateDecision => !(d instanceof Promise));
      assert.ok(atOnce.length >= 50 - 8, `${atOnce.length} of 50 answered at once (saturated)`);
      assert.ok(atOnce.every((d) => !d.allowed && d.reason === "limiter-error"), "a saturated store fails closed at once");
      const settled = await within(Promise.all(burst), "the burst's answers");
      assert.equal(settled.length, 50, "every take of the burst was answered");
      assert.equal(await within(asleep, "DEBUG SLEEP"), "OK");
      await waitUntil(async () => (await limiter.take("k")).allowed, () => "a take answered by the awake Redis");
      await waitUntil(() => store.pending === 0, () => `calls outstanding drained (now ${store.pending})`);
    } finally {
      side.close();
    }
  });
});
