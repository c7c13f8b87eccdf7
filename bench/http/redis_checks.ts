// The Redis part, in process (on each runtime): one rate check against a real Redis beside
// the same check in memory, and rate-limiter-flexible's RateLimiterRedis on the same Redis.
//   REDIS_PORT=6379 <runtime> bench/http/redis_checks.ts [rounds]
// Per round, every subject in turn (interleaved round by round, so drift in machine load hits
// all alike; every other round in reverse order):
//   serial     SERIAL checks one after another on a hot key (limit out of reach), each timed
//              alone: p50 and p99 in µs;
//   pipelined  CONCURRENT checks kept in flight until PIPELINED are done: checks per second
//              (one connection: the client pipelines concurrent commands), and where a
//              check's CPU went: this process's (process.cpuUsage: the client library and
//              the limiter), Redis's (INFO cpu: the whole server process) and, of that, its
//              script calls' (INFO commandstats: the usec of EVAL and EVALSHA);
//   flood      one abusive key (limit FLOOD_LIMIT per minute) checked FLOOD times by 16
//              concurrent callers: Redis commands run (INFO commandstats, before and after),
//              with and without the local denied-key cache (rate-limiter-flexible: with and
//              without inMemoryBlockOnConsumed, its equivalent).
// Prints `RESULT {json}` for bench/http/part_redis.mjs.
import { createClient } from "redis";
import { RateLimiterRedis, RateLimiterRes } from "rate-limiter-flexible";
import { createFixedWindowLimiter } from "../../src/mod.ts";
import { median, runtimeName } from "../_harness.ts";
import type { NodeRedisLike } from "../../src/redis/mod.ts";
import { sharedSubjects } from "./redis_subjects.ts";

const port = Number(process.env.REDIS_PORT);
if (!(port > 0)) throw new Error("REDIS_PORT must name the port of a running redis-server (bench/http/part_redis.mjs starts one)");
const ROUNDS = Number((globalThis as { Deno?: { args: string[] } }).Deno?.args[0] ?? process.argv[2] ?? 5);
const SERIAL = 2_000;
const CONCURRENT = 64;
const PIPELINED = 20_000;
const FLOOD = 5_000;
const FLOOD_LIMIT = 10;
const WINDOW_MS = 60_000;
const OUT_OF_REACH = 1e9;

/** Answers whether `key` may proceed now (and counts it). */
export type Check = (key: string) => boolean | Promise<boolean>;
export interface Subject {
  name: string;
  /** Whether it talks to Redis (the flood counts its commands). */
  redis: boolean;
  /** A check with this limit per window; `prefix` keeps rounds apart in Redis. */
  make(limit: number, windowMs: number, prefix: string): Check | Promise<Check>;
}

const client = createClient({ url: `redis://127.0.0.1:${port}` });
client.on("error", () => {});
await client.connect();

/**
 * Commands Redis has run so far (INFO commandstats; INFO itself left out): `calls` counts
 * every command, those a script runs inside Redis included; `trips` counts the commands
 * clients sent — each check of both libraries is one script call (EVAL or EVALSHA), so the
 * round-trips are the script calls plus any other command sent directly (SCRIPT LOAD, …),
 * i.e. every command that is not one a script calls; `scriptUs` is the time Redis spent in
 * EVAL and EVALSHA calls, in µs.
 */
async function commands(): Promise<{ calls: number; trips: number; scriptUs: number }> {
  const info = String(await client.sendCommand(["INFO", "commandstats"]));
  let calls = 0;
  let trips = 0;
  let scriptUs = 0;
  for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) {
    if (m[1] === "info") continue;
    calls += Number(m[2]);
    if (/^(eval|evalsha|eval_ro|evalsha_ro|fcall|fcall_ro|ping|script(\|.*)?)$/.test(m[1]!)) trips += Number(m[2]);
    if (m[1] === "eval" || m[1] === "evalsha") scriptUs += Number(m[3]);
  }
  return { calls, trips, scriptUs };
}

/** Redis's CPU so far (INFO cpu) and its script calls' share of it, in µs. */
async function redisCpu(): Promise<{ cpuUs: number; scriptUs: number }> {
  const info = String(await client.sendCommand(["INFO", "cpu"]));
  const field = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, "m").exec(info)?.[1] ?? NaN);
  return { cpuUs: (field("used_cpu_user") + field("used_cpu_sys")) * 1e6, scriptUs: (await commands()).scriptUs };
}

/** This process's CPU so far (every thread), in µs. */
const ownCpu = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};

const rlf = (block: boolean): Subject => ({
  name: `rate-limiter-flexible RateLimiterRedis${block ? " + inMemoryBlockOnConsumed" : ""}`,
  redis: true,
  make(limit, windowMs, prefix) {
    const limiter = new RateLimiterRedis({
      storeClient: client,
      useRedisPackage: true,
      points: limit,
      duration: windowMs / 1000,
      keyPrefix: `rlf:${prefix}`,
      ...(block ? { inMemoryBlockOnConsumed: limit } : {}),
    });
    return (key) => limiter.consume(key).then(() => true, (e: unknown) => {
      if (e instanceof RateLimiterRes) return false;
      throw e;
    });
  },
});

const subjects: Subject[] = [
  {
    name: "serve-hygiene fixed window, in memory",
    redis: false,
    make: (limit, windowMs) => {
      const limiter = createFixedWindowLimiter({ limit, windowMs, maxKeys: 4096 });
      return (key) => limiter.take(key).allowed;
    },
  },
  ...sharedSubjects(client as unknown as NodeRedisLike),
  rlf(false),
  rlf(true),
];

interface Row {
  name: string;
  p50Us: number[];
  p99Us: number[];
  checksPerS: number[];
  /** CPU a pipelined check: this process's, Redis's whole, Redis's in script calls (µs). */
  clientUs: number[];
  redisUs: number[];
  scriptUs: number[];
  /** Checks of a limit out of reach that were denied all the same (a failed or timed-out call). */
  failed: number[];
  floodTrips: number[];
  floodCalls: number[];
  floodAllowed: number[];
}
const rows: Row[] = subjects.map((s) => ({ name: s.name, p50Us: [], p99Us: [], checksPerS: [], clientUs: [], redisUs: [], scriptUs: [], failed: [], floodTrips: [], floodCalls: [], floodAllowed: [] }));

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;

async function serial(check: Check): Promise<[number, number]> {
  const times = new Array<number>(SERIAL);
  for (let i = 0; i < SERIAL; i++) {
    const t0 = performance.now();
    const r = check("hot");
    if (r instanceof Promise) await r;
    times[i] = (performance.now() - t0) * 1000;
  }
  times.sort((a, b) => a - b);
  return [pct(times, 50), pct(times, 99)];
}

/** `total` checks of `key`, `width` of them in flight at a time; resolves with the allowed count. */
async function concurrent(check: Check, key: string, total: number, width: number): Promise<number> {
  let next = 0;
  let allowed = 0;
  const worker = async () => {
    while (next < total) {
      next++;
      if (await check(key)) allowed++;
    }
  };
  await Promise.all(Array.from({ length: width }, worker));
  return allowed;
}

// Every key of this process is its own: runs on other runtimes share the Redis (and a flood's
// window lasts a minute).
const RUN = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
for (let round = 1; round <= ROUNDS; round++) {
  // Odd rounds in the order listed, even ones in reverse: each subject follows a different one
  // in turn (in a one-round check of this part the first Redis subject of the round read
  // several µs dearer on the client than the next).
  const order = [...subjects.entries()];
  for (const [i, s] of round % 2 === 1 ? order : order.reverse()) {
    const row = rows[i]!;
    const hot = await s.make(OUT_OF_REACH, WINDOW_MS, `${RUN}r${round}s${i}`);
    await serial(hot); // warm-up: scripts loaded, code compiled
    const [p50, p99] = await serial(hot);
    row.p50Us.push(p50);
    row.p99Us.push(p99);
    const redis0 = s.redis ? await redisCpu() : undefined;
    const cpu0 = ownCpu();
    const t0 = performance.now();
    const admitted = await concurrent(hot, "piped", PIPELINED, CONCURRENT);
    row.checksPerS.push(PIPELINED / ((performance.now() - t0) / 1000));
    row.clientUs.push((ownCpu() - cpu0) / PIPELINED);
    if (redis0 !== undefined) {
      const redis1 = await redisCpu();
      row.redisUs.push((redis1.cpuUs - redis0.cpuUs) / PIPELINED);
      row.scriptUs.push((redis1.scriptUs - redis0.scriptUs) / PIPELINED);
    }
    row.failed.push(PIPELINED - admitted);
    if (s.redis) {
      const flood = await s.make(FLOOD_LIMIT, WINDOW_MS, `${RUN}f${round}s${i}`);
      const before = await commands();
      row.floodAllowed.push(await concurrent(flood, "abuser", FLOOD, 16));
      const after = await commands();
      row.floodTrips.push(after.trips - before.trips);
      row.floodCalls.push(after.calls - before.calls);
    }
    console.error(`round ${round} ${s.name}: p50 ${p50.toFixed(1)} µs, p99 ${p99.toFixed(1)} µs, ${row.checksPerS.at(-1)!.toFixed(0)} checks/s${row.failed.at(-1) ? ` (${row.failed.at(-1)} failed)` : ""}, CPU a check: client ${row.clientUs.at(-1)!.toFixed(1)} µs` +
      (s.redis ? `, Redis ${row.redisUs.at(-1)!.toFixed(1)} µs (scripts ${row.scriptUs.at(-1)!.toFixed(1)})` : "") +
      (s.redis ? `, flood: ${row.floodTrips.at(-1)} round-trips (${row.floodCalls.at(-1)} commands with those inside scripts), ${row.floodAllowed.at(-1)} allowed` : ""));
  }
}

const med = (v: number[]) => (v.length ? median(v) : null);
console.log(`RESULT ${JSON.stringify({
  runtime: runtimeName(),
  rounds: ROUNDS,
  params: { SERIAL, CONCURRENT, PIPELINED, FLOOD, FLOOD_LIMIT, WINDOW_MS },
  rows: rows.map((r) => ({ ...r, failedTotal: r.failed.reduce((a, b) => a + b, 0), p50: med(r.p50Us), p99: med(r.p99Us), checksPerSecond: med(r.checksPerS), client: med(r.clientUs), redisCpu: med(r.redisUs), script: med(r.scriptUs), trips: med(r.floodTrips), calls: med(r.floodCalls), allowed: med(r.floodAllowed) })),
})}`);
await client.close();
process.exit(0);
