// Part 2: overload. Two handlers that each burn 2 ms of CPU: /burn synchronously (never
// more than one request in flight; the queue sits in the kernel's socket buffers and only
// the load monitor can act) and /burn-async after one event-loop turn (the concurrency
// limit acts). 256 connections against a capacity of ~450 req/s: wrk's closed loop offers
// far more than 4× capacity. 2xx responses are timed one by one (latency.lua: an echoed
// send timestamp), so latency figures cover admitted requests only.
import { cpuSeconds, histMax, histPercentile, load, median, sleep, startServer, stopServer, undisturbed } from "./_lib.mjs";
import { barChart, envBlock, fmt, table } from "./_report.mjs";

const CONNECTIONS = 256;
/** The library's concurrency limit for these servers (see bench/README.md). */
export const DEFAULT_LIMIT = 1;

const HANDLERS = [["/burn", "sync"], ["/burn-async", "async"]];

export async function overload({ runs, runtimes, quick, gen, env, limit = DEFAULT_LIMIT, sweep }) {
  if (sweep) return limitSweep({ runs, runtimes, quick, gen, env, limits: sweep });
  const warmS = 1;
  const seconds = quick ? 3 : 4;
  const unloadedS = quick ? 2 : 3;
  const cases = [];
  for (const rt of runtimes) {
    for (const [path, kind] of HANDLERS) {
      const add = (id, label, file, args, connections) => cases.push({ rt, path, kind, id, label, file, args, connections, runs: [] });
      add("unloaded", "no protection, 1 connection (unloaded)", rt, ["none"], 1);
      add("none", "no protection", rt, ["none"], CONNECTIONS);
      add("lib", `serve-hygiene (concurrencyLimit ${limit}, load monitor defaults)`, rt, ["lib", String(limit)], CONNECTIONS);
      if (rt === "node") add("up", "Fastify + @fastify/under-pressure (maxEventLoopDelay 40 ms)", "fastify", ["under-pressure"], CONNECTIONS);
    }
  }
  for (let run = 1; run <= runs; run++) {
    for (const c of cases) {
      const server = await startServer(c.rt, c.file, c.args);
      try {
        const unloaded = c.connections === 1;
        await load(gen, { port: server.port, path: c.path, connections: c.connections, seconds: unloaded ? 1 : warmS, timeoutS: 30 });
        // What the warm-up left queued in the kernel is served (to closed sockets) before we measure.
        if (!unloaded) await sleep(1000);
        const measureS = unloaded ? unloadedS : seconds;
        const { result: [r, cpu], noise } = await undisturbed(measureS, async () => {
          const cpu0 = cpuSeconds(server.pid);
          const r = await load(gen, { port: server.port, path: c.path, connections: c.connections, seconds: measureS, timeoutS: 30, latency2xx: true });
          const cpu = cpuSeconds(server.pid) - cpu0;
          if (!unloaded) await sleep(1000); // a repeat starts from a drained queue too
          return [r, cpu];
        }, `${c.rt} ${c.kind} ${c.id}`);
        const m = {
          noise,
          goodput: r.ok / r.seconds,
          share503: r.refused / Math.max(1, r.requests),
          other: r.other + r.untimed,
          errors: r.connectErrors + r.readErrors + r.writeErrors + r.timeouts,
          p50Us: histPercentile(r.okHistUs, 50),
          p99Us: histPercentile(r.okHistUs, 99),
          maxUs: histMax(r.okHistUs),
          rps: r.requests / r.seconds,
          cpuShare: cpu / r.seconds,
        };
        c.runs.push(m);
        console.log(
          `  run ${run} ${c.rt.padEnd(4)} ${c.kind.padEnd(5)} ${c.label.padEnd(58)} 2xx ${fmt.int(m.goodput).padStart(5)}/s  503 ${fmt.pct(m.share503).padStart(4)}  ` +
            `2xx p50 ${fmt.ms(m.p50Us)} p99 ${fmt.ms(m.p99Us)} max ${fmt.ms(m.maxUs)} ms  (all ${fmt.int(m.rps)}/s, server CPU ${fmt.pct(m.cpuShare)})` +
            (m.errors || m.other ? `  errors ${m.errors}, other ${m.other}` : "") + (m.noise >= 0.1 ? `  (others used ${Math.round(m.noise * 100)}% of a core)` : ""),
        );
      } finally {
        await stopServer(server);
      }
    }
  }
  for (const c of cases) {
    for (const k of ["goodput", "share503", "p50Us", "p99Us", "maxUs", "rps", "cpuShare"]) c[k] = median(c.runs.map((m) => m[k]));
    c.errors = c.runs.reduce((n, m) => n + m.errors + m.other, 0);
  }
  const find = (rt, path, id) => cases.find((c) => c.rt === rt && c.path === path && c.id === id);
  for (const c of cases) {
    c.goodputShare = c.goodput / find(c.rt, c.path, "none").goodput;
    c.p99VsUnloaded = c.p99Us / find(c.rt, c.path, "unloaded").p99Us;
  }
  const verdicts = [];
  for (const rt of runtimes) {
    const s = find(rt, "/burn", "lib"), a = find(rt, "/burn-async", "lib");
    if (!s || !a) continue;
    verdicts.push(
      `- ${rt}, sync: goodput ${fmt.share(s.goodputShare)} (target ≥ 0.8) ${s.goodputShare >= 0.8 ? "met" : "**missed**"}; admitted p99 ${fmt.ms(s.p99Us)} ms (target ≤ 50 ms) ${s.p99Us <= 50_000 ? "met" : "**missed**"}.`,
      `- ${rt}, async: goodput ${fmt.share(a.goodputShare)} (target ≥ 0.95) ${a.goodputShare >= 0.95 ? "met" : "**missed**"}; admitted p99 ${fmt.share(a.p99VsUnloaded)}× the unloaded p99 (target ≤ 2×) ${a.p99VsUnloaded <= 2 ? "met" : "**missed**"}.`,
    );
  }
  const md = [
    `# Part 2 — overload`,
    "",
    `Each request burns 2 ms of CPU: \`/burn\` synchronously, \`/burn-async\` after one event-loop turn (setImmediate). Capacity on one core is ~450 req/s.`,
    `Overload: wrk -t1 -c${CONNECTIONS} (closed loop: a refused connection asks again at once, so offered load is far above 4× capacity), ${warmS} s warm-up, 1 s pause, ${seconds} s measured.`,
    `Unloaded: the unprotected server with 1 connection, ${unloadedS} s. Latency is timed per 2xx response by wrk (bench/http/latency.lua: each request carries its send time, the server echoes it), so p50/p99/max cover admitted requests only.`,
    `Goodput share = 2xx/s ÷ the unprotected server's 2xx/s on the same runtime and handler, same run. Median of ${runs} run(s). Server pinned to core 1, wrk to core 0.`,
    "",
    envBlock(env),
    "",
    "Targets (serve-hygiene rows):",
    "",
    ...verdicts,
    "",
  ];
  for (const rt of runtimes) {
    for (const [path, kind] of HANDLERS) {
      md.push(`## ${rt} — ${kind} (\`${path}\`)`, "");
      md.push(
        table(
          ["server", "2xx/s", "goodput share", "503 share", "2xx p50 ms", "2xx p99 ms", "2xx max ms", "p99 ÷ unloaded"],
          cases.filter((c) => c.rt === rt && c.path === path).map((c) => [
            c.label + (c.errors ? ` (${c.errors} errors/other statuses)` : ""),
            fmt.int(c.goodput), c.id === "unloaded" ? "—" : fmt.share(c.goodputShare), fmt.pct(c.share503),
            fmt.ms(c.p50Us), fmt.ms(c.p99Us), fmt.ms(c.maxUs), fmt.share(c.p99VsUnloaded),
          ]),
        ),
        "",
      );
    }
  }
  const color = { none: "#9aa5b1", lib: "#1f5fa8", up: "#f7a35c" };
  const loaded = cases.filter((c) => c.id !== "unloaded");
  const maxP99 = Math.max(...loaded.map((c) => c.p99Us / 1000));
  const svg = barChart({
    title: "Overload: 2 ms of CPU per request, 256 connections (≫ 4× capacity)",
    subtitle: `goodput relative to the unprotected server, and p99 latency of admitted (2xx) requests; median of ${runs} run(s)`,
    panels: [
      { title: "goodput ÷ unprotected (higher is better)", max: 1.2, ticks: [0, 0.25, 0.5, 0.75, 1], mark: 0.8, markLabel: "0.8 sync / 0.95 async targets", value: (c) => c.goodputShare, label: (c) => fmt.share(c.goodputShare) },
      {
        title: "2xx p99, ms (log scale; lower is better)",
        max: Math.log10(Math.max(1000, maxP99) * 1.5) + 1,
        ticks: [0, 1, 2, 3, 4].filter((t) => t <= Math.log10(Math.max(1000, maxP99) * 1.5) + 1),
        tickLabel: (t) => `${10 ** (t - 1)}`,
        mark: Math.log10(50) + 1,
        markLabel: "50 ms (sync target)",
        value: (c) => Math.log10(Math.max(0.1, c.p99Us / 1000)) + 1,
        label: (c) => `${fmt.ms(c.p99Us)} ms`,
      },
    ],
    groups: runtimes.flatMap((rt) => HANDLERS.map(([path, kind]) => ({
      title: `${rt} — ${kind} (${path})`,
      rows: loaded.filter((c) => c.rt === rt && c.path === path).map((c) => ({ ...c, name: c.label.replace(/ \(.*\)$/, ""), color: color[c.id] })),
    }))),
    labelWidth: 250,
  });
  const summary = cases.filter((c) => c.id !== "unloaded").map((c) => `${c.rt} ${c.kind} ${c.id}: goodput ${fmt.share(c.goodputShare)}, 503 ${fmt.pct(c.share503)}, 2xx p99 ${fmt.ms(c.p99Us)} ms (${fmt.share(c.p99VsUnloaded)}× unloaded), max ${fmt.ms(c.maxUs)} ms`).join("\n");
  return { files: { "overload.md": md.join("\n"), "overload.svg": svg, "overload.json": JSON.stringify({ env, limit, cases }, null, 1) }, summary };
}

/**
 * `--sweep=1,2,4,…`: the async handler behind serve-hygiene at each concurrency limit, next to
 * the unprotected server — how goodput and admitted latency trade against each other.
 */
async function limitSweep({ runs, runtimes, quick, gen, env, limits }) {
  const seconds = quick ? 3 : 4;
  const cases = [];
  for (const rt of runtimes) {
    cases.push({ rt, id: "unloaded", label: "no protection, 1 connection", args: ["none"], connections: 1, runs: [] });
    cases.push({ rt, id: "none", label: "no protection", args: ["none"], connections: CONNECTIONS, runs: [] });
    for (const l of limits) cases.push({ rt, id: `lib${l}`, label: `serve-hygiene, concurrencyLimit ${l}`, args: ["lib", String(l)], connections: CONNECTIONS, runs: [] });
  }
  for (let run = 1; run <= runs; run++) {
    for (const c of cases) {
      const server = await startServer(c.rt, c.rt, c.args);
      try {
        await load(gen, { port: server.port, path: "/burn-async", connections: c.connections, seconds: 1, timeoutS: 30 });
        await sleep(1000);
        const { result: r } = await undisturbed(seconds, async () => {
          const r = await load(gen, { port: server.port, path: "/burn-async", connections: c.connections, seconds, timeoutS: 30, latency2xx: true });
          await sleep(1000);
          return r;
        }, `${c.rt} ${c.id}`);
        const m = { goodput: r.ok / r.seconds, share503: r.refused / Math.max(1, r.requests), p99Us: histPercentile(r.okHistUs, 99), rps: r.requests / r.seconds };
        c.runs.push(m);
        console.log(`  run ${run} ${c.rt.padEnd(4)} ${c.label.padEnd(36)} 2xx ${fmt.int(m.goodput).padStart(5)}/s  503 ${fmt.pct(m.share503)}  2xx p99 ${fmt.ms(m.p99Us)} ms  (all ${fmt.int(m.rps)}/s)`);
      } finally {
        await stopServer(server);
      }
    }
  }
  for (const c of cases) for (const k of ["goodput", "share503", "p99Us", "rps"]) c[k] = median(c.runs.map((m) => m[k]));
  const md = [
    `# Part 2 — the async handler at several concurrency limits`,
    "",
    `\`/burn-async\` (one event-loop turn, then 2 ms of CPU), wrk -t1 -c${CONNECTIONS}, ${seconds} s measured after a 1 s warm-up and a 1 s pause, median of ${runs} run(s).`,
    "",
    envBlock(env),
    "",
  ];
  for (const rt of runtimes) {
    const base = cases.find((c) => c.rt === rt && c.id === "none");
    const unloaded = cases.find((c) => c.rt === rt && c.id === "unloaded");
    md.push(`## ${rt}`, "", table(["server", "2xx/s", "goodput share", "503 share", "2xx p99 ms", "p99 ÷ unloaded", "all responses/s"],
      cases.filter((c) => c.rt === rt).map((c) => [c.label, fmt.int(c.goodput), c.id === "unloaded" ? "—" : fmt.share(c.goodput / base.goodput), fmt.pct(c.share503), fmt.ms(c.p99Us), fmt.share(c.p99Us / unloaded.p99Us), fmt.int(c.rps)])), "");
  }
  return { files: { "overload-sweep.md": md.join("\n"), "overload-sweep.json": JSON.stringify({ env, cases }, null, 1) }, summary: "" };
}
