// Scenario for issue 14 item 3: the load monitor's batch bound under the part-2 overload
// (wrk -t1 -c256 closed loop, 2 ms of CPU per request), side by side in one run: the
// unprotected server, serve-hygiene's load monitor with its default batch bound, and with the
// bound at 15 ms, and with the bound off (the monitor as it was before the bound). Every subject
// runs once per round, interleaved; medians over the rounds. Not part of run.mjs (the
// overload part is owned by its own work); run it alone:
//   node bench/http/load_batch.mjs [--runs=3] [--runtimes=node,deno,bun] [--paths=/burn,/burn-async]
//     [--subjects=none,default,15,off] [--quiet-wait=15000]   (ms to wait for a quiet machine before each run)
// Node servers run from a tsc build of their own (.load-batch-build/ in the checkout, removed
// at the end: inside the checkout so node_modules and package.json resolve), never the
// shared node_modules/.cache build of run.mjs.
import { rmSync } from "node:fs";
import { join } from "node:path";
import { compileForNode, currentTree, detectLoadGenerator, endChildren, histPercentile, load, median, othersShare, othersTicks, root, sleep, startServer, stopServer, waitQuiet } from "./_lib.mjs";

const arg = (name, fallback) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const runs = Number(arg("runs", "3"));
const runtimes = arg("runtimes", "node,deno,bun").split(",");
const paths = arg("paths", "/burn").split(",");
const CONNECTIONS = 256;
const quietWaitMs = Number(arg("quiet-wait", "15000"));
for (const signal of ["SIGINT", "SIGTERM"]) {
  process.once(signal, () => (endChildren(), rmSync(join(root, ".load-batch-build"), { recursive: true, force: true }), process.exit(130)));
}

const allSubjects = [
  ["none", "no protection", null],
  ["default", "load monitor, batch bound default (25 ms)", {}],
  ["15", "load monitor, maxBatchMs 15", { loadMonitor: { maxBatchMs: 15 } }],
  // JSON has no Infinity: the longest duration stands for "off" (no turn lasts 24 days).
  ["off", "load monitor, batch bound off", { loadMonitor: { maxBatchMs: 2 ** 31 - 1 } }],
];
const picked = arg("subjects", "none,default,15,off").split(",");
const subjects = allSubjects.filter(([id]) => picked.includes(id));

const built = join(root, ".load-batch-build");
const tree = { ...currentTree, built };
try {
  if (runtimes.includes("node")) compileForNode(tree);
  const gen = detectLoadGenerator();
  const rows = [];
  for (const rt of runtimes) for (const path of paths) for (const [id, label, options] of subjects) rows.push({ rt, path, id, label, options, runs: [] });
  for (let run = 1; run <= runs; run++) {
    for (const r of rows) {
      const server = r.options === null
        ? await startServer(r.rt, r.rt, ["none"], { tree })
        : await startServer(r.rt, "load_batch", [JSON.stringify(r.options)], { tree });
      try {
        await load(gen, { port: server.port, path: r.path, connections: CONNECTIONS, seconds: 1, timeoutS: 30 });
        await sleep(1000);
        // The machine is shared: wait (bounded) for the others to quiet down, and record how
        // much of a core they used during the measured run all the same.
        await waitQuiet(quietWaitMs);
        const before = othersTicks();
        const w = await load(gen, { port: server.port, path: r.path, connections: CONNECTIONS, seconds: 4, timeoutS: 30, latency2xx: true });
        const noise = othersShare(before, othersTicks(), w.seconds);
        const m = { noise, goodput: w.ok / w.seconds, share503: w.refused / Math.max(1, w.requests), p50: histPercentile(w.okHistUs, 50) / 1000, p99: histPercentile(w.okHistUs, 99) / 1000 };
        r.runs.push(m);
        console.log(`run ${run} ${r.rt} ${r.path} ${r.label}: 2xx ${m.goodput.toFixed(0)}/s, 503 ${(m.share503 * 100).toFixed(0)}%, p50 ${m.p50.toFixed(1)} p99 ${m.p99.toFixed(1)} ms (others used ${Math.round(noise * 100)}% of a core)`);
        await sleep(1000);
      } finally {
        await stopServer(server);
      }
    }
  }
  console.log("\n| runtime | handler | server | goodput share | 503 share | 2xx p50 ms | 2xx p99 ms | others' CPU |\n|---|---|---|---:|---:|---:|---:|---:|");
  for (const r of rows) {
    const none = rows.find((x) => x.rt === r.rt && x.path === r.path && x.id === "none");
    // The goodput share is taken per round (against the unprotected server of the same round).
    const share = median(r.runs.map((m, i) => m.goodput / none.runs[i].goodput));
    const med = (k) => median(r.runs.map((m) => m[k]));
    console.log(`| ${r.rt} | ${r.path} | ${r.label} | ${share.toFixed(2)} | ${(med("share503") * 100).toFixed(0)}% | ${med("p50").toFixed(1)} | ${med("p99").toFixed(1)} | ${Math.round(med("noise") * 100)}% |`);
  }
} finally {
  rmSync(built, { recursive: true, force: true });
}
