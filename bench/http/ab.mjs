// A diagnostic, not a part of run.mjs: part 2's overload (wrk -t1 -c256 closed loop, the 1 s
// accept hold) against serve-hygiene servers of bench/http/servers, each subject a variant, a
// limit and environment knobs, optionally the library as it was at a git ref; subjects
// interleaved round by round, medians over the rounds. For a change to the overload path, set
// side by side with the library before it:
//   node bench/http/ab.mjs <node|deno|bun> <path> [--runs=3] [--seconds=6] [--warm[=N]] [--baseline=<ref>] <subject> ...
// A subject is `<limit>[:ENV=value;ENV=value…]`: `-` is the adaptive default, a number a fixed
// limit; `VARIANT=<variant>` serves another variant of the bench servers (`none`: the
// unprotected server); `WARM=N` its own warm-up (N s; 0: none); `CONNECTIONS=N` its own
// closed loop of N connections instead of 256 (e.g. the unprotected server at fewer clients:
// what a concurrency limit of N could at best give, with no waiter or refusal to pay); `BEFORE=1` runs it from the `--baseline` ref (the servers are this
// checkout's, see _lib.mjs's baselineTree); any other knob goes to the server's environment
// (BENCH_LOAD_MONITOR=0, BENCH_ADAPTIVE={…}, BENCH_SHED_WAIT_MS, …; servers/_shared.ts).
// `--warm`: a 1 s run and a 1 s pause first, as part 2 does (`--warm=N`: an N s run). e.g.
//   node bench/http/ab.mjs deno /burn-async --runs=4 --warm --seconds=4 --baseline=HEAD~1 '-:BEFORE=1' -
// Prints, per run and as medians: 2xx/s, non-2xx/s, the server's CPU (all threads, from
// /proc, from 1 s after the hold on) and its CPU per 2xx, and the admitted p99 over the run and
// over the requests sent 1 s or more into it. Servers are ones this script started, ended by PID.
// The CPU is also split: the server's main thread, and its other threads (the JavaScript
// engine's background compiler and garbage-collection helpers: V8's on Node and Deno,
// JavaScriptCore's on Bun), which share its core.
// Subjects run in the order given in odd rounds and in reverse in even ones, so each follows a
// different one in turn (what ran on the core just before moves a subject by a few points; `--fixed-order`:
// as given in every round).
// `--apart`: those other threads are moved to the load generator's core once the server
// listens (a diagnostic: what the main thread alone does when they do not take its core).
import { baselineTree, compileForNode, cpuSeconds, currentTree, detectLoadGenerator, endChildren, heldMs, histPercentile, load, mainThreadCpuSeconds, median, moveThreadsApart, runtimes, sleep, startServer, stopServer } from "./_lib.mjs";

const args = process.argv.slice(2);
const flag = (name, fallback) => args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const [rt, path, ...subjects] = args.filter((a) => !a.startsWith("--"));
if (!(rt in runtimes) || path === undefined || subjects.length === 0) {
  console.error("usage: node bench/http/ab.mjs <node|deno|bun> <path> [--runs=3] [--seconds=6] [--warm[=N]] [--baseline=<ref>] <limit>[:ENV=value;…] ...");
  process.exit(2);
}
const runs = Number(flag("runs", "3"));
const seconds = Number(flag("seconds", "6"));
// `--warm`: 1 s, as part 2 does; `--warm=N`: N s (e.g. to see what the JIT's tier-up costs a fresh server).
const warmS = args.includes("--warm") ? 1 : Number(flag("warm", "0"));
const warm = warmS > 0;
const apart = args.includes("--apart");
const fixedOrder = args.includes("--fixed-order");
const CONNECTIONS = 256;
const HOLD_MS = 1000;

const parse = (subject) => {
  const i = subject.indexOf(":");
  const limit = i < 0 ? subject : subject.slice(0, i);
  const env = {};
  for (const e of (i < 0 ? "" : subject.slice(i + 1)).split(";").filter(Boolean)) {
    const j = e.indexOf("=");
    if (j <= 0) throw new Error(`not ENV=value in subject ${subject}: ${e}`);
    env[e.slice(0, j)] = e.slice(j + 1);
  }
  const { VARIANT: variant = "lib", BEFORE: before, WARM: warmOwn, CONNECTIONS: connectionsOwn, ...rest } = env;
  const connections = connectionsOwn === undefined ? CONNECTIONS : Number(connectionsOwn);
  if (!Number.isInteger(connections) || connections < 1) throw new Error(`CONNECTIONS is not a whole number ≥ 1 in subject ${subject}`);
  return { limit, variant, before: before === "1", warmS: warmOwn === undefined ? warmS : Number(warmOwn), connections, env: rest };
};
const parsed = subjects.map(parse);
const ref = flag("baseline");
if (parsed.some((s) => s.before) && ref === undefined) throw new Error("a BEFORE=1 subject needs --baseline=<ref>");
if (rt === "node") compileForNode();
const baseline = parsed.some((s) => s.before) ? baselineTree(ref) : undefined;
const cleanUp = () => (endChildren(), baseline?.remove());
for (const signal of ["SIGINT", "SIGTERM"]) process.once(signal, () => (cleanUp(), process.exit(130)));

const ms = (hist) => (hist?.length ? histPercentile(hist, 99) / 1000 : NaN);
try {
  const gen = detectLoadGenerator();
  const results = subjects.map(() => []);
  for (let round = 0; round < runs; round++) {
    // Reversed every other round (see the header); e.g. what ran just before moved Bun's
    // I/O goodput by a few points (results/overload-io-frontier.md).
    const order = [...parsed.entries()];
    if (round % 2 === 1 && !fixedOrder) order.reverse();
    for (const [k, s] of order) {
      const server = await startServer(rt, rt, [s.variant, s.limit], { env: s.env, tree: s.before ? baseline : currentTree });
      try {
        if (apart) moveThreadsApart(server.pid);
        const run = (secs) => load(gen, { port: server.port, path, connections: s.connections, seconds: secs, timeoutS: 30, latency2xx: true, startMs: HOLD_MS });
        if (s.warmS > 0) {
          await run(s.warmS);
          await sleep(1000);
        }
        let c0 = 0;
        let m0 = 0;
        let t0 = 0;
        const mark = setTimeout(() => ((c0 = cpuSeconds(server.pid)), (m0 = mainThreadCpuSeconds(server.pid)), (t0 = performance.now())), heldMs(gen, HOLD_MS) + 1000);
        const r = await run(seconds);
        const s1 = (performance.now() - t0) / 1000;
        const cpu = t0 === 0 ? NaN : (cpuSeconds(server.pid) - c0) / s1;
        const main = t0 === 0 ? NaN : (mainThreadCpuSeconds(server.pid) - m0) / s1;
        clearTimeout(mark);
        const row = { ok: r.ok / r.seconds, non2xx: (r.non2xx ?? 0) / r.seconds, cpu, main, p99: ms(r.okHistUs), p99After1s: ms(r.okHistSteadyUs) };
        results[k].push(row);
        console.log(`round ${round + 1} ${subjects[k]}: ${line(row)}`);
      } finally {
        await stopServer(server);
      }
      await sleep(300);
    }
  }
  console.log(`\n${rt} ${path}, wrk -t1 -c${CONNECTIONS} (unless a subject says otherwise), ${seconds} s${warm ? ` after a ${warmS} s warm-up` : ""}${apart ? ", the servers' other threads on the load core" : ""}, ${fixedOrder ? "the same order every round" : "the order reversed every other round"}, medians of ${runs} round(s)${baseline ? `; BEFORE=1: ${ref} (${baseline.commit.slice(0, 10)})` : ""}`);
  for (const [k, subject] of subjects.entries()) {
    const m = (f) => median(results[k].map(f)); // f(run, round)
    // Each ratio taken inside a round, against the first subject's run of that round, then the median.
    const vsFirst = k === 0 ? "" : `; ÷ ${subjects[0]} in its round: 2xx/s ${m((x, i) => x.ok / results[0][i].ok).toFixed(3)}, p99 after 1 s ${m((x, i) => x.p99After1s / results[0][i].p99After1s).toFixed(2)}`;
    console.log(`${subject}: ${line({ ok: m((x) => x.ok), non2xx: m((x) => x.non2xx), cpu: m((x) => x.cpu), main: m((x) => x.main), p99: m((x) => x.p99), p99After1s: m((x) => x.p99After1s) })}${vsFirst}`);
  }
} finally {
  cleanUp();
}

function line({ ok, non2xx, cpu, main, p99, p99After1s }) {
  return `2xx/s ${ok.toFixed(0)}, non-2xx/s ${non2xx.toFixed(0)}, server CPU ${(cpu * 100).toFixed(0)}% (${((cpu * 1e6) / ok).toFixed(0)} µs per 2xx; main thread ${(main * 100).toFixed(1)}%, ${((main * 1e6) / ok).toFixed(0)} µs per 2xx; other threads ${((cpu - main) * 100).toFixed(1)}%), admitted p99 ${p99.toFixed(1)} ms (sent after 1 s: ${p99After1s.toFixed(1)} ms)`;
}
