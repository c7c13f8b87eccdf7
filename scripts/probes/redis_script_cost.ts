// Probe (all three runtimes): what one shared check costs inside Redis, and why. Runs, on a
// real redis-server started on a free port (pinned to core 0 where `taskset` exists), 64
// checks in flight through node-redis for each script below, interleaved over ROUNDS rounds
// (every other round in reverse), and prints per script the median of Redis's own time a call
// (INFO commandstats: usec_per_call of EVALSHA) and of this process's CPU a check:
//   store     serve-hygiene's fixed-window script, with the arguments the store sends;
//   commands  the same Redis commands and reply alone (TIME, HMGET, HINCRBY; 5 arguments in,
//             6 values out) with none of the script's logic: the cost of the data model;
//   one-value the same, its 6 values joined into one string (a cheaper reply to decode?);
//   rlr       rate-limiter-flexible's RateLimiterRedis script (SET NX, INCRBY, PTTL; 2 values).
// Run: node --import tsx scripts/probes/redis_script_cost.ts | deno run -A … | bun run …
//      (taskset -c 1 in front keeps this process off Redis's core)
// Measured (6 December 2026, redis-server 7.0.15, node-redis 6.3.1; Node 20.20 / Deno 2.9.6 /
// Bun 1.4.5 in turn, this process on core 1): Redis's time a call — store 12.6 / 12.4 / 12.9
// µs, commands 10.4 / 9.2 / 9.5, one-value 9.1 / 8.1 / 10.2, rlr 5.6 / 5.3 / 6.3. So the
// fixed window's cost in Redis is its data model: the server's clock (TIME) and a hash read
// and written, for a window that answers exactly as the in-memory one at the server's time
// (test/redis/scripts.test.ts); the script's own logic adds 2–3 µs and the reply's shape
// ~1. RateLimiterRedis needs neither clock nor hash: its window is the key's TTL, in whole
// seconds. This process's CPU a check moved more between runs than between scripts here
// (Node 19–23 µs, Deno 9–14, Bun 7–9): the probe does not rank the replies' decoding.
import { execFileSync } from "node:child_process";
import process from "node:process";
import { createClient } from "redis";
import { _script } from "../../src/redis/_scripts.ts";
import { startRedis } from "../../test/support/redis.ts";

const N = 30_000;
const ROUNDS = 5;
const runtime = "Bun" in globalThis ? "bun" : "Deno" in globalThis ? "deno" : "node";

// The data model's commands as the store's script runs them on a live window, then its reply.
const COMMANDS = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
local cost, limit, window = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local v = redis.call('HMGET', KEYS[1], 's', 'c')
local start, count = tonumber(v[1]) or now, tonumber(v[2]) or 0
local reset = window - (now - start)
redis.call('HINCRBY', KEYS[1], 'c', cost)
`;
const scripts: Record<string, string> = {
  store: _script({ f: true, t: false }),
  commands: COMMANDS + `return { t[1], t[2], 1, '0', limit - count - cost, string.format('%.17g', reset) }`,
  "one-value": COMMANDS + `return t[1] .. ' ' .. t[2] .. ' 1 0 ' .. (limit - count - cost) .. ' ' .. string.format('%.17g', reset)`,
  rlr: `redis.call('set', KEYS[1], 0, 'EX', ARGV[2], 'NX')
local consumed = redis.call('incrby', KEYS[1], ARGV[1])
local ttl = redis.call('pttl', KEYS[1])
if ttl == -1 then redis.call('expire', KEYS[1], ARGV[2]) ttl = 1000 * ARGV[2] end
return {consumed, ttl}`,
};
// A limit out of reach: every check is admitted and charged, as on a hot key under a generous limit.
const args = (name: string, key: string) =>
  name === "rlr" ? ["1", key, "1", "60", "1000000000", "60"] : ["1", key, "f", "1", "1000000000", "60000", "0.00006"];

const redis = await startRedis();
try {
  execFileSync("taskset", ["-p", "-c", "0", String(redis.pid)], { stdio: "ignore" });
} catch {
  // No taskset: Redis shares the cores with this process (the ratios still hold, noisier).
}
const client = createClient({ url: redis.url });
client.on("error", () => {});
await client.connect();
const info = async (section: string) => String(await client.sendCommand(["INFO", section]));
const own = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};
const shas: Record<string, string> = {};
for (const [name, src] of Object.entries(scripts)) shas[name] = String(await client.sendCommand(["SCRIPT", "LOAD", src]));

const runs: Record<string, { redisUs: number; clientUs: number }[]> = {};
for (let round = 0; round < ROUNDS; round++) {
  const names = Object.keys(scripts);
  for (const name of round % 2 === 0 ? names : names.reverse()) {
    const key = `probe:${name}`;
    const command = () => ["EVALSHA", shas[name]!, ...args(name, key)];
    await client.sendCommand(command()); // the key exists: a live window
    await client.sendCommand(["CONFIG", "RESETSTAT"]);
    let next = 0;
    const worker = async () => {
      while (next < N) {
        next++;
        const reply = await client.sendCommand(command());
        if (name === "one-value") String(reply).split(" ").map(Number); // what a client would do with it
      }
    };
    const c0 = own();
    await Promise.all(Array.from({ length: 64 }, worker));
    const clientUs = (own() - c0) / N;
    const stats = /^cmdstat_evalsha:calls=(\d+),usec=(\d+)/m.exec(await info("commandstats"));
    if (stats === null || Number(stats[1]) !== N) throw new Error(`${name}: Redis counted ${stats?.[1]} EVALSHA calls, not ${N}`);
    (runs[name] ??= []).push({ redisUs: Number(stats[2]) / N, clientUs });
  }
}
const median = (v: number[]) => [...v].sort((a, b) => a - b)[v.length >> 1]!;
for (const [name, r] of Object.entries(runs)) {
  console.log(JSON.stringify({ runtime, script: name, redisUsPerCall: +median(r.map((x) => x.redisUs)).toFixed(2), clientCpuUsPerCheck: +median(r.map((x) => x.clientUs)).toFixed(2) }));
}
await client.quit();
await redis.stop();
