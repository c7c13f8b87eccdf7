// A diagnostic, not a measured benchmark (issue 14): how much optimizing compilation V8 does
// inside part 2's measured window of Node's asynchronous storm. V8's optimizing compiler runs on
// background threads, and the server's threads share its one core, so what it compiles inside
// the measured 10 s is taken from the requests. One Node server of bench/http/servers (a
// variant and a limit, as probe.mjs takes them) runs with `--trace-opt`; wrk -c256 loads
// /burn-async as part 2 does (1 s warm-up, 1 s pause, then 10 s after the 1 s accept hold), and
// the script prints the optimizations completed before the window and inside it, with their
// compile time (V8's own figures), and the functions that took the most inside it.
//   node bench/http/storm_compiles.mjs <variant> [limit|-]     e.g. `lib -`, `cap-work -`
// Node only (the servers are built with tsc first, as run.mjs builds them). The server is one
// this script started, ended by its PID.
import { compileForNode, detectLoadGenerator, load, sleep, startServer, stopServer } from "./_lib.mjs";

const [variant, limit = "-"] = process.argv.slice(2);
if (variant === undefined) {
  console.error("usage: node bench/http/storm_compiles.mjs <variant> [limit|-]");
  process.exit(2);
}
compileForNode();
process.env.BENCH_NODE_FLAGS = "--trace-opt";
const server = await startServer("node", "node", [variant, limit]);
const t0 = performance.now();
const compiled = []; // { at, name, ms }
let pending = "";
server.child.stdout.on("data", (chunk) => {
  pending += chunk;
  for (let i; (i = pending.indexOf("\n")) >= 0; pending = pending.slice(i + 1)) {
    const m = /completed (?:compiling|optimizing) .*?<JSFunction ([^ >(]*).*?took ([\d.]+), ([\d.]+), ([\d.]+) ms/.exec(pending.slice(0, i));
    if (m) compiled.push({ at: performance.now() - t0, name: m[1] || "(anonymous)", ms: Number(m[2]) + Number(m[3]) + Number(m[4]) });
  }
});
const HOLD_MS = 1000;
try {
  const gen = detectLoadGenerator();
  await load(gen, { port: server.port, path: "/burn-async", connections: 256, seconds: 1, startMs: HOLD_MS });
  await sleep(1000);
  const from = performance.now() - t0 + HOLD_MS;
  await load(gen, { port: server.port, path: "/burn-async", connections: 256, seconds: 10, startMs: HOLD_MS });
  const to = performance.now() - t0;
  const inside = compiled.filter((c) => c.at >= from && c.at <= to);
  const ms = (list) => list.reduce((s, c) => s + c.ms, 0).toFixed(0);
  const before = compiled.filter((c) => c.at < from);
  console.log(`${variant} ${limit}: before the measured window ${before.length} optimizations (${ms(before)} ms of compiling); inside it ${inside.length} (${ms(inside)} ms)`);
  const byName = new Map();
  for (const c of inside) byName.set(c.name, (byName.get(c.name) ?? 0) + c.ms);
  console.log([...byName].sort((a, b) => b[1] - a[1]).slice(0, 25).map(([name, t]) => `${name} ${t.toFixed(1)}`).join("; "));
} finally {
  await stopServer(server);
}
