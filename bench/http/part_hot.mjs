// Part 1: the hot path. GET / answering a 5-byte body through each stack, wrk -t1 -c64;
// req/s, p99, and the server's CPU time per request (utime+stime from /proc over the
// measured run ÷ requests) — the primary cost figure, because on two cores one wrk thread
// can saturate before a fast server does.
import { cpuSeconds, load, median, startServer, stopServer, undisturbed } from "./_lib.mjs";
import { barChart, envBlock, fmt, table } from "./_report.mjs";

const CONNECTIONS = 64;

const CASES = {
  bun: [
    ["a", "raw", "(a) Bun.serve, raw"],
    ["b", "guard", "(b) serve-hygiene/bun, every gate on"],
    ["c", "hono", "(c) Hono on Bun.serve"],
    ["d", "hono-hygiene", "(d) Hono + hygiene() middleware"],
    ["e", "peers", "(e) Hono + hono-rate-limiter + body-limit + timeout"],
  ],
  deno: [
    ["a", "raw", "(a) Deno.serve, raw"],
    ["b", "guard", "(b) serve-hygiene/deno, every gate on"],
    ["c", "hono", "(c) Hono on Deno.serve"],
    ["d", "hono-hygiene", "(d) Hono + hygiene() middleware"],
    ["e", "peers", "(e) Hono + hono-rate-limiter + body-limit + timeout"],
  ],
  node: [
    ["a", "raw", "(a) node:http, raw"],
    ["b", "guard", "(b) serve-hygiene/node, every gate on"],
    ["b0", "translate", "serve-hygiene/node translation alone, no guard"],
    ["c", "hono", "(c) Hono on @hono/node-server"],
    ["c2", "hono-translate", "Hono on serve-hygiene/node translation, no guard"],
    ["d", "hono-hygiene", "(d) Hono + hygiene() on @hono/node-server"],
    ["d2", "hono-adapter", "Hono served by serve-hygiene/node, every gate on"],
    ["e", "peers", "(e) Hono + hono-rate-limiter + body-limit + timeout (@hono/node-server)"],
    ["f", "fastify:stack", "(f) Fastify + @fastify/rate-limit + @fastify/under-pressure"],
  ],
};

export async function hotPath({ runs, runtimes, quick, gen, env }) {
  const warmS = quick ? 1 : 2;
  const seconds = quick ? 3 : 4;
  const cases = runtimes.flatMap((rt) => (CASES[rt] ?? []).map(([id, variant, label]) => ({ rt, id, variant, label, runs: [] })));
  for (let run = 1; run <= runs; run++) {
    for (const c of cases) {
      const [file, variant] = c.variant.includes(":") ? c.variant.split(":") : [c.rt, c.variant];
      const server = await startServer(c.rt, file, [variant]);
      try {
        await load(gen, { port: server.port, connections: CONNECTIONS, seconds: warmS });
        const { result: [r, cpu], noise } = await undisturbed(seconds, async () => {
          const cpu0 = cpuSeconds(server.pid);
          const r = await load(gen, { port: server.port, connections: CONNECTIONS, seconds });
          return [r, cpuSeconds(server.pid) - cpu0];
        }, `${c.rt} ${c.id}`);
        const m = {
          noise,
          rps: r.requests / r.seconds,
          p99Us: r.p99Us,
          cpuUsPerReq: (cpu * 1e6) / r.requests,
          cpuShare: cpu / r.seconds,
          bad: r.non2xx + r.connectErrors + r.readErrors + r.writeErrors + r.timeouts,
        };
        await stopServer(server);
        const denials = [...server.log().matchAll(/\{"denials":(\{[^}]*\})\}/g)].at(-1)?.[1];
        if (denials) m.denials = denials;
        c.runs.push(m);
        console.log(
          `  run ${run} ${c.rt.padEnd(4)} ${c.label.padEnd(72)} ${fmt.int(m.rps).padStart(7)} req/s  p99 ${fmt.ms(m.p99Us).padStart(6)} ms  ` +
            `${fmt.us(m.cpuUsPerReq).padStart(5)} µs CPU/req  server CPU ${fmt.pct(m.cpuShare)}${m.bad ? `  ${m.bad} non-2xx/errors!` : ""}${m.denials ? ` denials since start ${m.denials}` : ""}${m.noise >= 0.1 ? `  (others used ${Math.round(m.noise * 100)}% of a core)` : ""}`,
        );
      } finally {
        await stopServer(server);
      }
    }
  }
  for (const c of cases) {
    c.rps = median(c.runs.map((m) => m.rps));
    c.p99Us = median(c.runs.map((m) => m.p99Us));
    c.cpuUsPerReq = median(c.runs.map((m) => m.cpuUsPerReq));
    c.cpuShare = median(c.runs.map((m) => m.cpuShare));
    c.bad = c.runs.reduce((n, m) => n + m.bad, 0);
  }
  const by = (rt, id) => cases.find((c) => c.rt === rt && c.id === id);
  for (const c of cases) {
    const a = by(c.rt, "a");
    c.rpsX = c.rps / a.rps;
    c.p99X = c.p99Us / a.p99Us;
    c.cpuX = c.cpuUsPerReq / a.cpuUsPerReq;
  }

  const md = [
    `# Part 1 — hot path`,
    "",
    `GET / answering a 5-byte body. wrk -t1 -c${CONNECTIONS}, ${warmS} s warm-up then ${seconds} s measured, median of ${runs} run(s), cases interleaved run by run.`,
    `Server pinned to core 1, wrk to core 0, loopback. "CPU µs/req" is the server process's utime+stime (/proc/<pid>/stat, all threads) over the measured run divided by the requests served — the primary cost figure; "server CPU" is that CPU time as a share of the run's wall time (100% = the server, not wrk, was the bottleneck).`,
    `Ratios are to (a), the raw server of the same runtime, taken in the same run.`,
    "",
    envBlock(env),
    "",
  ];
  for (const rt of runtimes.filter((r) => CASES[r])) {
    md.push(`## ${rt}`, "");
    md.push(
      table(
        ["stack", "req/s", "÷ (a)", "p99 ms", "÷ (a)", "CPU µs/req", "÷ (a)", "server CPU"],
        cases.filter((c) => c.rt === rt).map((c) => [
          c.label + (c.bad ? ` (${c.bad} non-2xx/errors)` : ""),
          fmt.int(c.rps), fmt.share(c.rpsX), fmt.ms(c.p99Us), fmt.share(c.p99X), fmt.us(c.cpuUsPerReq), fmt.share(c.cpuX), fmt.pct(c.cpuShare),
        ]),
      ),
      "",
    );
  }
  if (runtimes.includes("node")) {
    const [c, c2, d, d2] = ["c", "c2", "d", "d2"].map((id) => by("node", id));
    const verdict = (x, y) => `${x.rps > y.rps ? "faster" : "slower"}: ${fmt.int(x.rps)} vs ${fmt.int(y.rps)} req/s (${fmt.share(x.rps / y.rps)}), ` +
      `${fmt.us(x.cpuUsPerReq)} vs ${fmt.us(y.cpuUsPerReq)} µs CPU/req (${fmt.share(x.cpuUsPerReq / y.cpuUsPerReq)})`;
    md.push(
      `## Node: serve-hygiene's node:http translation vs @hono/node-server`,
      "",
      `- The same Hono app, no guard: serve-hygiene/node's translation is ${verdict(c2, c)}.`,
      `- The same Hono app with every gate on: served by serve-hygiene/node vs hygiene() on @hono/node-server is ${verdict(d2, d)}.`,
      "",
    );
  }
  const color = { a: "#9aa5b1", b: "#1f5fa8", b0: "#7cb5ec", c: "#b8c2cc", c2: "#aac8ea", d: "#2f7ed8", d2: "#5a9be6", e: "#e4572e", f: "#f7a35c" };
  const maxCpu = Math.max(2, Math.ceil(Math.max(...cases.map((c) => c.cpuX)) * 2) / 2);
  const svg = barChart({
    title: "Hot path: cost per request relative to the raw server of each runtime",
    subtitle: `GET / (5-byte body), wrk -t1 -c${CONNECTIONS}, server and wrk on separate cores, median of ${runs} run(s)`,
    panels: [
      { title: "server CPU per request ÷ raw (lower is better)", max: maxCpu, ticks: range(0, maxCpu, 0.5), mark: 1.05, markLabel: "1.05 target for (b)", value: (c) => c.cpuX, label: (c) => `${fmt.share(c.cpuX)}  (${fmt.us(c.cpuUsPerReq)} µs)` },
      { title: "req/s ÷ raw (higher is better)", max: 1.2, ticks: [0, 0.25, 0.5, 0.75, 1], value: (c) => c.rpsX, label: (c) => `${fmt.share(c.rpsX)}  (${fmt.int(c.rps / 1000)}k)` },
    ],
    groups: runtimes.filter((r) => CASES[r]).map((rt) => ({
      title: `${rt} ${env[rt]}`,
      rows: cases.filter((c) => c.rt === rt).map((c) => ({ ...c, name: c.label.length > 52 ? c.label.slice(0, 50) + "…" : c.label, color: color[c.id] })),
    })),
    labelWidth: 370,
  });
  const summary = cases.map((c) => `${c.rt} ${c.id}: ${fmt.int(c.rps)} req/s (${fmt.share(c.rpsX)}), CPU ${fmt.us(c.cpuUsPerReq)} µs/req (${fmt.share(c.cpuX)})`).join("\n");
  return { files: { "hot-path.md": md.join("\n"), "hot-path.svg": svg, "hot-path.json": JSON.stringify({ env, cases }, null, 1) }, summary };
}

function range(from, to, step) {
  const out = [];
  for (let v = from; v <= to + 1e-9; v += step) out.push(Math.round(v * 100) / 100);
  return out;
}
