// Part 7: the shared store (issue 15) on a real redis-server started here, side by side in
// one run:
//   (1) in process, per runtime (bench/http/redis_checks.ts): one check against Redis beside
//       the same check in memory (p50/p99 µs, each check timed alone), checks per second with
//       64 checks in flight (pipelined on one connection), and an abusive client's flood:
//       the round-trips the denied-key cache saves (INFO commandstats). rate-limiter-flexible's
//       RateLimiterRedis runs on the same Redis in the same rounds;
//   (2) over HTTP (bench/http/servers/redis.ts): the hot path with every gate on, the per-IP
//       limiter local vs shared through Redis, in the same rounds (CPU per request, req/s, p99).
// Redis is pinned to the load generator's core (0), servers and the in-process bench to core 1.
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { rmSync } from "node:fs";
import { bin, compileForNode, median, root, SERVER_CORE } from "./_lib.mjs";
import { startRedisServer } from "./_redis.mjs";
import { ratioInRounds, runRounds } from "./_rounds.mjs";
import { envBlock, fmt, table } from "./_report.mjs";

const FILE = join("bench", "http", "redis_checks.ts");
// Node runs a build of its own: node_modules/.cache is shared by every checkout whose
// node_modules is a link to one directory, and another checkout compiling meanwhile replaced
// the shared build under a running part (its servers then failed to start).
const tree = { name: "current", root, built: join(root, "node_modules", ".cache", `serve-hygiene-bench-redis-${process.pid}`) };
const commands = {
  node: (rounds) => [process.execPath, [join(tree.built, FILE.replace(/\.ts$/, ".js")), String(rounds)]],
  deno: (rounds) => [bin("deno"), ["run", "-A", FILE, String(rounds)]],
  bun: (rounds) => [bin("bun"), ["run", FILE, String(rounds)]],
};
const CONNECTIONS = 64;

export async function redis({ runs, runtimes, quick, gen, env }) {
  if (runtimes.includes("node")) compileForNode(tree);
  const server = await startRedisServer();
  console.log(`redis-server ${server.version} on 127.0.0.1:${server.port} (pid ${server.pid}), pinned to core 0`);
  try {
    const rounds = quick ? 1 : Math.max(runs, 3);
    const checks = {};
    for (const rt of runtimes) {
      const [exe, args] = commands[rt](rounds);
      const r = spawnSync("taskset", ["-c", SERVER_CORE, exe, ...args], {
        cwd: root, encoding: "utf8", timeout: 10 * 60_000, env: { ...process.env, REDIS_PORT: String(server.port), NO_COLOR: "1" },
      });
      process.stdout.write(r.stderr.split("\n").filter((l) => l.startsWith("round ")).map((l) => `  ${rt} ${l}\n`).join(""));
      const line = r.stdout.split("\n").find((l) => l.startsWith("RESULT "));
      if (!line) throw new Error(`redis checks on ${rt} failed:\n${r.stdout}\n${r.stderr}`);
      checks[rt] = JSON.parse(line.slice(7));
    }

    process.env.HYGIENE_BENCH_REDIS_URL = server.url;
    const cases = runtimes.flatMap((rt) => [
      { rt, id: "local", label: "per-IP fixed window in memory", file: "redis", variant: "local", tree },
      { rt, id: "shared", label: "per-IP fixed window shared through Redis", file: "redis", variant: "shared", tree },
    ]);
    await runRounds({ cases, runs: quick ? 1 : runs, warmS: quick ? 1 : 2, seconds: quick ? 3 : 4, connections: CONNECTIONS, gen });
    const by = (rt, id) => cases.find((c) => c.rt === rt && c.id === id);
    for (const c of cases) {
      c.cpuX = ratioInRounds(c, by(c.rt, "local"));
      c.rpsX = ratioInRounds(c, by(c.rt, "local"), "rps");
    }
    const md = render({ checks, cases, runtimes, rounds, runs: quick ? 1 : runs, env, version: server.version });
    const summary = runtimes.map((rt) => {
      const rows = checks[rt].rows;
      const mem = rows[0];
      const parts = rows.map((r) => `${r.name}: p50 ${fmt.us(r.p50)} µs, p99 ${fmt.us(r.p99)} µs, ${fmt.int(r.checksPerSecond)} checks/s (CPU a check: client ${fmt.us(r.client)} µs${r.redisCpu === null ? "" : `, Redis ${fmt.us(r.redisCpu)} µs`})${r.trips === null ? "" : `, flood ${fmt.int(r.trips)} round-trips`}`);
      const http = ["local", "shared"].map((id) => `${id} ${fmt.us(by(rt, id).cpuUsPerReq)} µs CPU/req`).join(", ");
      return `${rt}: ${parts.join("; ")} (in memory ${fmt.us(mem.p50)} µs); HTTP ${http}, shared ÷ local ${fmt.share(by(rt, "shared").cpuX)}`;
    }).join("\n");
    const json = { env, redis: server.version, checks, cases: cases.map(({ tree, ...c }) => c) };
    return { files: { "redis.md": md, "redis.json": JSON.stringify(json, null, 1) }, summary };
  } finally {
    delete process.env.HYGIENE_BENCH_REDIS_URL;
    await server.stop();
    rmSync(tree.built, { recursive: true, force: true });
  }
}

function render({ checks, cases, runtimes, rounds, runs, env, version }) {
  const first = checks[runtimes[0]];
  const p = first.params;
  const out = [
    "# Part 7 — limits shared through Redis",
    "",
    `A real redis-server ${version} on 127.0.0.1, started by the runner (persistence off), pinned to core 0 with the load generator; the servers and the in-process bench on core 1. ` +
      "Absolute figures move with the machine's speed from run to run: the ratios inside a round are the figures to read.",
    "",
    envBlock(env, `node-redis ${pkg("redis")} is the client of every Redis subject (one connection each process).`),
    "",
    "## One check, in process",
    "",
    `Each subject in turn, interleaved round by round (${rounds} rounds in one process per runtime; medians over rounds). ` +
      `"p50 / p99": ${fmt.int(p.SERIAL)} checks of one hot key one after another (limit out of reach), each timed alone, µs. ` +
      `"checks/s": ${fmt.int(p.PIPELINED)} checks with ${p.CONCURRENT} in flight (the client pipelines them on its one connection); ` +
      `over those checks, the CPU a check took in the bench's process ("client": the limiter and node-redis, process.cpuUsage, every thread) and in Redis ("Redis": its whole process, INFO cpu; "scripts": its EVAL/EVALSHA calls alone, INFO commandstats) — ` +
      `with client and Redis on two cores and one connection, each pipelined batch waits for the client, then for Redis, so a check's time is roughly the sum of the two. ` +
      `"flood": one key over its limit (${p.FLOOD_LIMIT} per ${p.WINDOW_MS / 1000} s) checked ${fmt.int(p.FLOOD)} times by 16 concurrent callers; ` +
      `"round-trips" are the commands clients sent (script calls and any other command, from INFO commandstats), "commands" adds those the scripts ran inside Redis.`,
    "",
  ];
  for (const rt of runtimes) {
    const c = checks[rt];
    out.push(`### ${rt} (${c.runtime})`, "");
    const mem = c.rows[0];
    const peer = c.rows.find((r) => r.name === "rate-limiter-flexible RateLimiterRedis");
    // Ratios to the peer are taken round by round (both ran in the same round), then the median.
    const vsPeer = (r, key) => median(r[key].map((v, i) => v / peer[key][i]));
    out.push(table(
      ["subject", "p50 µs", "p99 µs", "p50 ÷ in memory", "p50 ÷ RateLimiterRedis", "checks/s (64 in flight)", "checks/s ÷ RateLimiterRedis", "CPU µs a check: client", "Redis", "scripts", "failed checks", "flood: allowed", "flood: round-trips", "flood: commands"],
      c.rows.map((r) => [r.name, fmt.us(r.p50), fmt.us(r.p99), fmt.share(r.p50 / mem.p50), r === mem ? "—" : fmt.share(vsPeer(r, "p50Us")), fmt.int(r.checksPerSecond), r === mem ? "—" : fmt.share(vsPeer(r, "checksPerS")),
        fmt.us(r.client), r.redisCpu === null ? "—" : fmt.us(r.redisCpu), r.script === null ? "—" : fmt.us(r.script), fmt.int(r.failedTotal), r.allowed === null ? "—" : fmt.int(r.allowed), r.trips === null ? "—" : fmt.int(r.trips), r.calls === null ? "—" : fmt.int(r.calls)]),
    ), "");
    const on = c.rows.find((r) => r.name === "serve-hygiene fixed window in Redis");
    const off = c.rows.find((r) => r.name === "serve-hygiene fixed window in Redis, denied-key cache off");
    if (on && off) out.push(`The denied-key cache saved ${fmt.int(off.trips - on.trips)} of ${fmt.int(off.trips)} round-trips in the flood (${fmt.pct(1 - on.trips / off.trips)}); the ${fmt.int(on.trips)} left are the first calls in flight before the first denial came back, and the script load.`, "");
  }
  out.push(
    "## The HTTP hot path, shared limiter vs local",
    "",
    `GET / (5-byte body) through serve() with every gate of part 1 on but the load monitor (on this shared machine it trips on other processes' load, and it is not what differs), the per-IP fixed window either in memory or shared through Redis (limit out of reach, every request one check). ` +
      `wrk -t1 -c${CONNECTIONS}, 2 s warm-up then 4 s measured, median of ${runs} round(s); both cases run in every round on freshly started servers. ` +
      `"CPU µs/req" is the server process's CPU time per request (Redis's own CPU is not in it); ratios are taken inside each round.`,
    "",
    table(
      ["runtime", "limiter", "req/s", "p99 ms", "CPU µs/req", "CPU ÷ local", "req/s ÷ local", "non-2xx"],
      cases.map((c) => [c.rt, c.label, fmt.int(c.rps), fmt.ms(c.p99Us), fmt.us(c.cpuUsPerReq), fmt.share(c.cpuX), fmt.share(c.rpsX), c.non2xx ? `**${fmt.int(c.non2xx)}**` : "0"]),
    ),
    "",
  );
  return out.join("\n");
}

function pkg(name) {
  const r = spawnSync(process.execPath, ["-p", `require("${name}/package.json").version`], { cwd: root, encoding: "utf8" });
  return r.stdout.trim() || "?";
}
