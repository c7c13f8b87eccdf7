#!/usr/bin/env node
// The benchmark suite over real HTTP (and the in-process figures that sit beside it).
//   node bench/http/run.mjs [hot] [overload] [limiters] [drain] [size] [refusal] [redis] [--runs=3] [--runtimes=node,deno,bun] [--quick]
//                           [--baseline <git-ref>] [--no-quiet-wait]
//   overload also takes --limit=N (a fixed concurrency limit instead of the adaptive default) and
//   --wait-sweep=50,100,… (the admission queue's drop threshold, written to overload-wait.md instead)
//   --standing-sweep=50,100,… (its bound once it stands, written to overload-standing.md instead)
//   --accept-hold-ms=N (how long each connection's first request is held so the idle server
//   accepts every connection before the load starts; default 1000, 0: no hold)
//   step: overload → half of capacity, the limit and the share over time (overload-step.{md,svg})
//   --busy: do not wait for a quiet machine (a shared box never is); figures still go to results,
//   each run's disturbance is printed, and the report says the machine was busy
//   --no-quiet-wait: the same as --busy
//   --slices=N (hot, refusal): a cross-check that measures each round's cases in N slices in turn
//   (bench/http/_rounds.mjs), written to hot-path-sliced.* / refusal-sliced.* instead
//   --baseline <ref> (hot, refusal): the library as it was at <ref> (git archive into a temporary
//   directory, removed at the end) runs the serve-hygiene subjects next to this checkout's, in the
//   same rounds: before and after side by side in one run.
// No part named: all seven (redis needs redis-server). Each server is a child pinned with `taskset -c 1`; the load
// generator (wrk -t1, else autocannon) is pinned with `taskset -c 0`; load goes to 127.0.0.1
// only; every run is bounded in time; each figure is the median of --runs runs, and the
// cases compared are interleaved run by run. Writes bench/results/<part>.{md,json[,svg]}.
import { spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { baselineTree, busyOthers, compileForNode, describeCurrent, detectLoadGenerator, endChildren, environment, LOAD_CORE, quiet, root } from "./_lib.mjs";
import { hotPath } from "./part_hot.mjs";
import { overload } from "./part_overload.mjs";
import { step } from "./part_step.mjs";
import { drain } from "./part_drain.mjs";
import { limiters } from "./part_limiters.mjs";
import { size } from "./part_size.mjs";
import { refusal } from "./part_refusal.mjs";
import { redis } from "./part_redis.mjs";

const PARTS = { hot: hotPath, overload, step, limiters, drain, size, refusal, redis };
const argv = process.argv.slice(2);
// `--name=value`, or `--name value` for the options that take one.
const TAKES_VALUE = new Set(["baseline"]);
const valueAt = new Set(argv.flatMap((a, i) => (TAKES_VALUE.has(a.slice(2)) && a.startsWith("--") ? [i + 1] : [])));
const flag = (name, fallback) => {
  const i = argv.indexOf(`--${name}`);
  if (i >= 0 && TAKES_VALUE.has(name)) return argv[i + 1] ?? fallback;
  return argv.find((a) => a.startsWith(`--${name}=`))?.split("=").slice(1).join("=") ?? fallback;
};
const quick = argv.includes("--quick");
if (quick || argv.includes("--busy") || argv.includes("--no-quiet-wait")) quiet.wait = false; // --quick: a harness check, figures are not results
const named = argv.filter((a, i) => !a.startsWith("--") && !valueAt.has(i));
for (const n of named) if (!(n in PARTS)) throw new Error(`unknown part "${n}": choose from ${Object.keys(PARTS).join(", ")}`);
// With no part named, the Redis part runs only where redis-server exists (named, it must).
const hasRedis = () => spawnSync("sh", ["-c", `command -v ${process.env.HYGIENE_TEST_REDIS_SERVER ?? "redis-server"}`]).status === 0;
const parts = named.length ? named : Object.keys(PARTS).filter((p) => p !== "redis" || hasRedis() || (console.log("part redis skipped: redis-server not found (apt-get install redis-server)"), false));
const opts = {
  runs: Number(flag("runs", quick ? 1 : 3)),
  runtimes: flag("runtimes", "node,deno,bun").split(","),
  quick,
  ...(flag("limit") === undefined ? {} : { limit: Number(flag("limit")) }),
  ...(flag("wait-sweep") === undefined ? {} : { waitSweep: flag("wait-sweep").split(",").map(Number) }),
  ...(flag("standing-sweep") === undefined ? {} : { standingSweep: flag("standing-sweep").split(",").map(Number) }),
  ...(flag("accept-hold-ms") === undefined ? {} : { acceptHoldMs: Number(flag("accept-hold-ms")) }),
  ...(flag("slices") === undefined ? {} : { slices: Number(flag("slices")) }),
};
if (opts.runs < 1) throw new Error("--runs must be at least 1");
if (opts.slices !== undefined && !(Number.isInteger(opts.slices) && opts.slices >= 1)) throw new Error("--slices must be a whole number, at least 1");
// The runner itself — its samplers (each server's /proc/<pid>/stat, the accept queue in
// /proc/net/tcp every 250 ms), reading wrk's output — runs on the load generator's core, every
// thread of it, so that it takes nothing of the server's core (since 6 December 2026; unpinned
// before). Children it starts without taskset (tsc) inherit it.
spawnSync("taskset", ["-a", "-p", "-c", LOAD_CORE, String(process.pid)], { stdio: "ignore" });

// --quick figures are not results: they go to a temporary directory, never over bench/results.
const results = quick ? join(tmpdir(), "serve-hygiene-bench-quick") : join(root, "bench", "results");
mkdirSync(results, { recursive: true });
const needsHttp = parts.some((p) => ["hot", "overload", "step", "drain", "refusal", "redis"].includes(p));
const gen = needsHttp ? detectLoadGenerator() : undefined;
if (parts.some((p) => p !== "size")) compileForNode();
const env = { ...environment(gen), current: describeCurrent() };
const baselineRef = flag("baseline");
if (baselineRef !== undefined && !parts.some((p) => p === "hot" || p === "refusal")) throw new Error("--baseline applies to the hot and refusal parts: name one of them");
const baseline = baselineRef === undefined ? undefined : baselineTree(baselineRef);
// The temporary tree goes however the run ends (the servers are ended by the parts, by PID).
const removeBaseline = () => baseline?.remove();
process.once("exit", removeBaseline);
for (const sig of ["SIGINT", "SIGTERM"]) {
  process.once(sig, () => {
    endChildren();
    process.exit(130);
  });
}
const started = Date.now();
try {
  for (const part of parts) {
    const t0 = Date.now();
    console.log(`\n## ${part} (${opts.runs} run${opts.runs > 1 ? "s" : ""} per figure)`);
    const others = await busyOthers();
    if (others.length) console.log(`WARNING: other processes are busy on this machine and will distort the figures: ${others.join(", ")}`);
    const out = await PARTS[part]({ ...opts, gen, env, baseline });
    for (const [name, text] of Object.entries(out.files)) writeFileSync(join(results, name), text);
    console.log(out.summary);
    console.log(`(${part}: ${((Date.now() - t0) / 1000).toFixed(0)} s; wrote ${Object.keys(out.files).map((f) => join(results, f)).join(", ")})`);
  }
} finally {
  removeBaseline();
}
console.log(`\nHTTP suite done in ${((Date.now() - started) / 60000).toFixed(1)} min`);
