// A diagnostic, not a measured benchmark: one serve-hygiene server (bench/http/servers, variant
// `lib`) under one wrk run, with the server's diagnostic knobs, printing what it traced. For
// looking into a figure of the overload part before changing anything; the figures that count
// come from run.mjs, side by side and over rounds.
//   node bench/http/probe.mjs <node|deno|bun> <path> [limit|-] [ENV=value ...]
//     [--connections=256] [--seconds=6] [--rate=-] [--warm[=N]] [--variant=lib]
// e.g. node bench/http/probe.mjs node /io - BENCH_WAITS=1 'BENCH_ADAPTIVE={"tolerance":1.2}'
// The server is pinned to core 1 and wrk to core 0 (as in run.mjs); wrk holds every
// connection's first request 1 s (latency.lua) so the server accepts them all first. `--warm`:
// one 2 s run first (`--warm=N`: N s), then a 1 s pause (the overload part's warm-up runs 1 s, then pauses 1 s). `--rate`: paced, in
// requests a second (the half-of-capacity runs). `--variant`: another server variant of
// bench/http/servers (e.g. `none`, the unprotected server, to compare with). BENCH_NODE_FLAGS (an
// environment variable of this script): flags for a Node server (e.g. `--cpu-prof
// --cpu-prof-dir=DIR`), which is then sent SIGTERM before it is killed. Prints the server's WAITS/TRACE lines and the
// measured run's 2xx/s, 503/s and admitted p50/p99 (the seconds after the hold). The load goes
// through _lib.mjs's load(), as in run.mjs. The server is one this script started, ended by its PID.
import { compileForNode, detectLoadGenerator, histPercentile, load, runtimes, sleep, stopServer, startServer } from "./_lib.mjs";

const flags = process.argv.slice(2).filter((a) => a.startsWith("--"));
const [rt, path, limit = "-", ...envs] = process.argv.slice(2).filter((a) => !a.startsWith("--"));
const flag = (name, fallback) => flags.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
if (!(rt in runtimes) || path === undefined) {
  console.error("usage: node bench/http/probe.mjs <node|deno|bun> <path> [limit|-] [ENV=value ...] [--connections=256] [--seconds=6] [--rate=-] [--warm[=N]]");
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
const rateFlag = flag("rate", "-");
const rate = rateFlag === "-" ? undefined : Number(rateFlag);
if (rt === "node") compileForNode();
const variant = flag("variant", "lib");
const warmSeconds = flags.includes("--warm") ? 2 : Number(flag("warm", "0"));
const server = await startServer(rt, rt, [variant, limit], { env });
const traced = [];
server.child.stderr.on("data", (chunk) => {
  for (const l of String(chunk).split("\n")) if (l.startsWith("WAITS") || l.startsWith("TRACE") || l.startsWith(`{"denials"`)) traced.push(l);
});
const gen = detectLoadGenerator();
const HOLD_MS = 1000;
// load() runs wrk asynchronously, so the server's lines are read while it runs.
const run = (s) => load(gen, { port: server.port, path, connections, seconds: s, timeoutS: 30, latency2xx: true, rate, startMs: HOLD_MS });
try {
  if (warmSeconds > 0) {
    await run(warmSeconds);
    await sleep(1000);
    traced.push("--- measured run");
  }
  const r = await run(seconds);
  await sleep(200);
  const ms = (hist, p) => (hist?.length ? (histPercentile(hist, p) / 1000).toFixed(1) : "-");
  for (const l of traced) console.log(l);
  console.log(`${rt} ${variant} ${path} limit ${limit} ${envs.join(" ")}: 2xx/s ${(r.ok / r.seconds).toFixed(0)}, 503/s ${(r.refused / r.seconds).toFixed(0)}, admitted p50 ${ms(r.okHistUs, 50)} ms, p99 ${ms(r.okHistUs, 99)} ms (requests sent after 1 s: p99 ${ms(r.okHistSteadyUs, 99)} ms)`);
} finally {
  if (process.env.BENCH_NODE_FLAGS) {
    server.child.kill("SIGTERM"); // a profiled server writes its profile on exit
    await Promise.race([server.exited, sleep(5_000)]);
  }
  await stopServer(server);
}
