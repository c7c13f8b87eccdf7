// Scenario for issue 14: where the goodput goes under the part-2 overload (wrk -t1 -c256 closed
// loop, the accept hold, 2 ms of CPU per request), by taking serve-hygiene's defaults apart in
// one run. Subjects, once per round, interleaved; medians over the rounds; goodput share is
// taken per round against the unprotected server of the same round:
//   none      the unprotected server;
//   cap       the 15-line in-flight cap (32) around it: refuses at once;
//   default   serve-hygiene with every default;
//   norefuse  the same limit and queue, but a wait bound no run reaches (shedWaitMs and
//             standingWaitMs 60 s) and no load monitor: nothing is refused, the waiters wait;
//   waitonly  as norefuse with the load monitor on (its turn waits take the same 60 s bound):
//             the synchronous handler's case, where the monitor is the gate;
//   nolimit   no concurrency limit (Infinity) and no load monitor: everything admitted at once;
//   nolm      serve-hygiene's defaults without the load monitor;
//   fetch     (Node only) the unprotected handler written as a fetch handler on
//             @hono/node-server: the Request/Response translation every fetch handler on Node
//             pays, serve-hygiene's adapter included.
// So default − norefuse is what the refusals cost (with the waiting they come after), norefuse
// − nolimit what serving at the small limit costs, nolimit − none what the library's per-request
// path costs under this load. Not part of run.mjs; run it alone:
//   node bench/http/goodput_parts.mjs [--runs=3] [--runtimes=node,deno,bun] [--paths=/burn-async,/burn]
//     [--subjects=none,cap,default,norefuse,waitonly,nolimit] [--seconds=6] (nolm and fetch: only when named)
// Node servers run from a tsc build of their own (.goodput-parts-build/ in the checkout,
// removed at the end), never the shared node_modules/.cache build of run.mjs.
import { rmSync } from "node:fs";
import { join } from "node:path";
import { compileForNode, cpuSeconds, currentTree, detectLoadGenerator, endChildren, heldMs, histPercentile, load, median, root, sleep, startServer, stopServer } from "./_lib.mjs";

const arg = (name, fallback) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const runs = Number(arg("runs", "3"));
const runtimes = arg("runtimes", "node,deno,bun").split(",");
const paths = arg("paths", "/burn-async").split(",");
const seconds = Number(arg("seconds", "6"));
const CONNECTIONS = 256;
const HOLD_MS = 1000;
const built = join(root, ".goodput-parts-build");
for (const signal of ["SIGINT", "SIGTERM"]) {
  process.once(signal, () => (endChildren(), rmSync(built, { recursive: true, force: true }), process.exit(130)));
}

const NEVER = { BENCH_SHED_WAIT_MS: "60000", BENCH_STANDING_WAIT_MS: "60000", BENCH_LOAD_MONITOR: "0" };
const allSubjects = [
  ["none", "no protection", ["none", "-"], {}],
  ["cap", "the 15-line in-flight cap (32)", ["cap-work", "-"], {}],
  ["default", "serve-hygiene defaults", ["lib", "-"], {}],
  ["norefuse", "the same, nothing refused (wait bound 60 s, no load monitor)", ["lib", "-"], NEVER],
  ["waitonly", "the same, nothing refused, the load monitor on (its turn waits bounded by the same 60 s)", ["lib", "-"], { BENCH_SHED_WAIT_MS: "60000", BENCH_STANDING_WAIT_MS: "60000" }],
  ["nolimit", "no concurrency limit, no load monitor", ["lib", "Infinity"], { BENCH_LOAD_MONITOR: "0" }],
  ["nolm", "serve-hygiene defaults without the load monitor", ["lib", "-"], { BENCH_LOAD_MONITOR: "0" }],
  ["fetch", "no protection, the handler as a fetch handler on @hono/node-server", ["none-fetch", "-"], {}, ["node"]],
];
const picked = arg("subjects", "none,cap,default,norefuse,waitonly,nolimit").split(",");
const subjects = allSubjects.filter(([id]) => picked.includes(id));
const runsOn = (subject, rt) => subject[4] === undefined || subject[4].includes(rt);

const tree = { ...currentTree, built };
try {
  if (runtimes.includes("node")) compileForNode(tree);
  const gen = detectLoadGenerator();
  const results = {}; // `${rt} ${path} ${id}` → [{ ok, refused, p99, cpu }]
  for (let round = 0; round < runs; round++) {
    for (const rt of runtimes) {
      for (const path of paths) {
        for (const subject of subjects) {
          if (!runsOn(subject, rt)) continue;
          const [id, , argv, env] = subject;
          const server = await startServer(rt, rt, argv, { env, tree });
          try {
            // CPU from the end of the hold and the first second on, as "p99 after 1 s" counts.
            const skipMs = heldMs(gen, HOLD_MS) + 1000;
            let c0 = 0;
            let t0 = 0;
            const mark = setTimeout(() => ((c0 = cpuSeconds(server.pid)), (t0 = performance.now())), skipMs);
            const r = await load(gen, { port: server.port, path, connections: CONNECTIONS, seconds, timeoutS: 30, latency2xx: true, startMs: HOLD_MS });
            clearTimeout(mark);
            const cpu = t0 === 0 ? NaN : (cpuSeconds(server.pid) - c0) / ((performance.now() - t0) / 1000);
            const hist = r.okHistSteadyUs ?? r.okHistUs;
            (results[`${rt} ${path} ${id}`] ??= []).push({ ok: r.ok / r.seconds, refused: (r.non2xx ?? 0) / r.seconds, p99: hist ? histPercentile(hist, 99) / 1000 : NaN, cpu });
          } finally {
            await stopServer(server);
          }
          await sleep(300);
        }
      }
    }
  }
  console.log(`# Goodput taken apart: wrk -t1 -c${CONNECTIONS}, accept hold ${HOLD_MS} ms, ${seconds} s, median of ${runs} round(s)\n`);
  for (const rt of runtimes) {
    for (const path of paths) {
      console.log(`## ${rt} ${path}\n\n| subject | 2xx/s | goodput share | refusals/s | 2xx p99 after 1 s, ms | server CPU |\n|---|---:|---:|---:|---:|---:|`);
      const base = results[`${rt} ${path} none`];
      for (const subject of subjects) {
        if (!runsOn(subject, rt)) continue;
        const [id, label] = subject;
        const rows = results[`${rt} ${path} ${id}`];
        const share = base === undefined ? NaN : median(rows.map((x, i) => x.ok / base[i].ok));
        const m = (f) => median(rows.map(f));
        console.log(`| ${label} | ${m((x) => x.ok).toFixed(0)} | ${share.toFixed(3)} | ${m((x) => x.refused).toFixed(0)} | ${m((x) => x.p99).toFixed(1)} | ${(m((x) => x.cpu) * 100).toFixed(0)}% |`);
      }
      console.log("");
    }
  }
} finally {
  endChildren();
  rmSync(built, { recursive: true, force: true });
}
