// A diagnostic, not a measured benchmark: one serve-hygiene server (bench/http/servers, variant
// `lib`) under one wrk run, with the server's diagnostic knobs, printing what it traced. For
// looking into a figure of the overload part before changing anything; the figures that count
// come from run.mjs, side by side and over rounds.
//   node bench/http/probe.mjs <node|deno|bun> <path> [limit|-] [ENV=value ...]
//     [--connections=256] [--seconds=6] [--rate=-] [--warm]
// e.g. node bench/http/probe.mjs node /io - BENCH_WAITS=1 'BENCH_ADAPTIVE={"tolerance":1.2}'
// The server is pinned to core 1 and wrk to core 0 (as in run.mjs); wrk holds every
// connection's first request 1 s (latency.lua) so the server accepts them all first. `--warm`:
// one 2 s run first, then a 1 s pause (as the overload part's warm-up). `--rate`: paced, in
// requests a second (the half-of-capacity runs). Prints the server's WAITS/TRACE lines and the
// measured run's 2xx/s, 503/s and admitted p50/p99 (over the whole run, hold included in the
// seconds). The server is one this script started, ended by its PID.
import { spawn, spawnSync } from "node:child_process";
import { compileForNode, runtimes, sleep, stopServer, startServer } from "./_lib.mjs";

const flags = process.argv.slice(2).filter((a) => a.startsWith("--"));
const [rt, path, limit = "-", ...envs] = process.argv.slice(2).filter((a) => !a.startsWith("--"));
const flag = (name, fallback) => flags.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
if (!(rt in runtimes) || path === undefined) {
  console.error("usage: node bench/http/probe.mjs <node|deno|bun> <path> [limit|-] [ENV=value ...] [--connections=256] [--seconds=6] [--rate=-] [--warm]");
  process.exit(2);
}
const env = {};
for (const e of envs) {
  const i = e.indexOf("=");
  if (i <= 0) throw new Error(`not ENV=value: ${e}`);
  env[e.slice(0, i)] = e.slice(i + 1);
}
const connections = flag("connections", "256");
const seconds = Number(flag("seconds", "6"));
const rate = flag("rate", "-");
if (rt === "node") compileForNode();
const server = await startServer(rt, rt, ["lib", limit], { env });
const traced = [];
server.child.stderr.on("data", (chunk) => {
  for (const l of String(chunk).split("\n")) if (l.startsWith("WAITS") || l.startsWith("TRACE")) traced.push(l);
});
// wrk runs asynchronously, so the server's lines are read while it runs.
const wrk = (s) =>
  new Promise((resolve) => {
    const child = spawn("taskset", ["-c", "0", "wrk", "-t1", `-c${connections}`, `-d${s + 1}s`, "-s", "bench/http/latency.lua", `http://127.0.0.1:${server.port}${path}`, "--", rate, "1000"], { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.on("data", (c) => (out += c));
    child.once("exit", () => resolve(out));
  });
try {
  if (flags.includes("--warm")) {
    await wrk(2);
    await sleep(1000);
    traced.push("--- measured run");
  }
  const out = await wrk(seconds);
  await sleep(200);
  const m = /WRK (\{.*\})/.exec(out);
  if (m === null) throw new Error(`wrk printed no summary:\n${out}`);
  const j = JSON.parse(m[1]);
  const s = j.durationUs / 1e6;
  const pct = (hist, f) => {
    const total = hist.reduce((a, [, c]) => a + c, 0);
    let seen = 0;
    for (const [bucket, c] of [...hist].sort((x, y) => x[0] - y[0])) if ((seen += c) >= f * total) return (bucket / 1000).toFixed(1);
    return "-";
  };
  for (const l of traced) console.log(l);
  console.log(`${rt} ${path} limit ${limit} ${envs.join(" ")}: 2xx/s ${(j.ok / s).toFixed(0)}, 503/s ${(j.refused / s).toFixed(0)}, admitted p50 ${pct(j.okHistUs, 0.5)} ms, p99 ${pct(j.okHistUs, 0.99)} ms (requests sent after 1 s: p99 ${pct(j.okHistSteadyUs, 0.99)} ms)`);
} finally {
  await stopServer(server);
}
