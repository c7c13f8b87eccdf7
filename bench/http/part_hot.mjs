// Part 1: the hot path. GET / answering a 5-byte body through each stack, wrk -t1 -c64;
// req/s, p99, and the server's CPU time per request (utime+stime from /proc over the
// measured run ÷ requests) — the primary cost figure, because on two cores one wrk thread
// can saturate before a fast server does. Every gate is on and none may trip: the non-2xx
// responses of each subject are counted and reported (the target is none).
// With a baseline tree (--baseline <ref>), each serve-hygiene subject also runs from it, in
// the same rounds, right after the same subject of this checkout.
import { quietRatio, ratioInRounds, ratioSpread, runRounds } from "./_rounds.mjs";
import { barChart, envBlock, fmt, table } from "./_report.mjs";

const CONNECTIONS = 64;

// [id, variant ("file:variant" for another server file), label, serve-hygiene subject?]
const CASES = {
  bun: [
    ["a", "raw", "(a) Bun.serve, raw"],
    ["a2", "cap", "(a2) Bun.serve + the 15-line in-flight cap"],
    ["a3", "raw-peer", "(a3) Bun.serve reading each request's peer (requestIP)"],
    ["b", "guard", "(b) serve-hygiene/bun serve(), every gate on", true],
    ["c", "hono", "(c) Hono on Bun.serve"],
    ["c2", "hono-noop", "(c2) Hono + one no-op middleware"],
    ["d2", "hono-adapter", "(d2) Hono served by serve(), every gate on", true],
    ["d", "hono-hygiene", "(d) Hono + hygiene() middleware, every gate on", true],
    ["e", "peers", "(e) Hono + hono-rate-limiter + body-limit + timeout"],
  ],
  deno: [
    ["a", "raw", "(a) Deno.serve, raw"],
    ["a2", "cap", "(a2) Deno.serve + the 15-line in-flight cap"],
    ["a3", "raw-peer", "(a3) Deno.serve reading each request's peer (remoteAddr)"],
    ["b", "guard", "(b) serve-hygiene/deno serve(), every gate on", true],
    ["c", "hono", "(c) Hono on Deno.serve"],
    ["c2", "hono-noop", "(c2) Hono + one no-op middleware"],
    ["d2", "hono-adapter", "(d2) Hono served by serve(), every gate on", true],
    ["d", "hono-hygiene", "(d) Hono + hygiene() middleware, every gate on", true],
    ["e", "peers", "(e) Hono + hono-rate-limiter + body-limit + timeout"],
  ],
  node: [
    ["a", "raw", "(a) node:http, raw"],
    ["a2", "cap", "(a2) node:http + the 15-line in-flight cap"],
    ["b", "guard", "(b) serve-hygiene/node serve(), every gate on", true],
    ["c", "hono", "(c) Hono on @hono/node-server"],
    ["c2", "hono-noop", "(c2) Hono + one no-op middleware (@hono/node-server)"],
    ["d2", "hono-adapter", "(d2) Hono served by serve(), every gate on", true],
    ["d", "hono-hygiene", "(d) Hono + hygiene() on @hono/node-server, every gate on", true],
    ["e", "peers", "(e) Hono + hono-rate-limiter + body-limit + timeout (@hono/node-server)"],
    ["f", "fastify:stack", "(f) Fastify + @fastify/rate-limit + @fastify/under-pressure"],
  ],
};

/** The reference of the serve() target: the raw server on Deno and Bun, bare Hono on @hono/node-server on Node. */
export const TARGET_REF = { node: "c", deno: "a", bun: "a" };

/** Part 1's cases for these runtimes; a baseline tree adds a "before" twin after each serve-hygiene subject. */
export function hotCases(runtimes, baseline) {
  return runtimes.flatMap((rt) => (CASES[rt] ?? []).flatMap(([id, v, label, lib]) => {
    const [file, variant] = v.includes(":") ? v.split(":") : [rt, v];
    const c = { rt, id, label, file, variant, lib: !!lib };
    if (!lib || !baseline) return [c];
    return [{ ...c, label: `${label} — after` }, { ...c, id: `${id}-before`, label: `${label} — before`, tree: baseline, before: true, twinOf: id }];
  }));
}

export async function hotPath({ runs, runtimes, quick, gen, env, baseline, slices: sliceCount = 1 }) {
  const warmS = quick ? 1 : 2;
  const seconds = quick ? 3 : 4;
  const slices = quick ? 1 : sliceCount;
  const cases = await runRounds({ cases: hotCases(runtimes, baseline), runs, warmS, seconds, slices, connections: CONNECTIONS, gen });
  const by = (rt, id) => cases.find((c) => c.rt === rt && c.id === id);
  for (const c of cases) {
    c.rpsX = ratioInRounds(c, by(c.rt, "a"), "rps");
    c.cpuX = ratioInRounds(c, by(c.rt, "a"));
    c.cpuXHono = ratioInRounds(c, by(c.rt, "c"));
  }
  const rts = runtimes.filter((r) => CASES[r]);
  const md = [
    `# Part 1 — hot path${slices === 1 ? "" : ` (sliced: ${slices} slices a round)`}`,
    "",
    ...(slices === 1
      ? [
        `GET / answering a 5-byte body. wrk -t1 -c${CONNECTIONS}, ${warmS} s warm-up then ${seconds} s measured, median of ${runs} round(s); every case runs once per round, each on a freshly started server.`,
        `Server pinned to core 1, wrk to core 0, loopback. "CPU µs/req" is the server process's utime+stime (/proc/<pid>/stat, all threads) over the measured run divided by the requests served — the primary cost figure; "server CPU" is that CPU time as a share of the run's wall time (100% = the server, not wrk, was the bottleneck).`,
        `Ratios are taken inside each round (the case ÷ (a) or (c) of the same runtime in the same round), then the median over rounds; the targets give the middle half of the per-round ratios (p25–p75) after it, and the median over the quiet rounds alone (a diagnostic: those before which a fixed memory-bound loop, bench/http/_speed.mjs, ran on the server core within 1.25× its 10th-percentile time in the run, for both cases; a contended host slows the heavier server more). "non-2xx" counts the measured runs' non-2xx responses (the target is none); "refusals" is what the server's onDeny counted since it started (warm-up included).`,
      ]
      : [
        `GET / answering a 5-byte body. wrk -t1 -c${CONNECTIONS}; ${runs} round(s), sliced (\`--slices=${slices}\`, a cross-check of the one-run-per-case flow): a round starts every case of a runtime on a fresh server and warms each up ${warmS} s, then measures ${seconds} s of each in ${slices} slices of ${seconds / slices} s, the cases in turn (the order reversed every other slice), each slice after a 1 s re-warm, so the cases of one slice run seconds apart: this machine's speed moves by up to 2× over seconds (\`node scripts/probes/machine_speed.mjs\`). The servers idle through the other cases' slices.`,
        `Server pinned to core 1, wrk to core 0, loopback. "CPU µs/req" is the server process's utime+stime (/proc/<pid>/stat, all threads) over a measured slice divided by the requests served; "server CPU" is that CPU time as a share of the slice's wall time. Figures are medians over all slices.`,
        `Ratios are taken inside each slice (the case ÷ (a) or (c) of the same runtime in the same slice), then the median over all slices; the targets give the middle half of the per-slice ratios (p25–p75) after it, and the median over the quiet slices alone (a diagnostic: those before which a fixed memory-bound loop, bench/http/_speed.mjs, ran on the server core within 1.25× its 10th-percentile time in the run, for both cases). "non-2xx" counts the measured slices' non-2xx responses (the target is none); "refusals" is what the server's onDeny counted since it started (warm-up included).`,
      ]),
    baseline ? `"after" is this checkout (${env.current}); "before" is ${baseline.ref} (${baseline.commit.slice(0, 10)}), the library exported from git and served by the same server files, run in the same rounds.` : "",
    "",
    envBlock(env),
    "",
    "## Targets (issue 13)",
    "",
    ...targets(rts, by, baseline, cases),
    "",
  ];
  for (const rt of rts) {
    md.push(`## ${rt} ${env[rt]}`, "");
    md.push(
      table(
        ["stack", "req/s", "p99 ms", "CPU µs/req", "CPU ÷ (a) raw", "CPU ÷ (c) bare Hono", "server CPU", "non-2xx", "refusals by layer"],
        cases.filter((c) => c.rt === rt).map((c) => [
          c.label + (c.failed ? ` (${c.failed} run(s) failed)` : "") + (c.errors ? ` (${c.errors} socket errors)` : ""),
          fmt.int(c.rps), fmt.ms(c.p99Us), fmt.us(c.cpuUsPerReq), fmt.share(c.cpuX), fmt.share(c.cpuXHono), fmt.pct(c.cpuShare),
          c.non2xx ? `**${fmt.int(c.non2xx)}**` : "0", c.denials ? `\`${c.denials}\`` : "",
        ]),
      ),
      "",
    );
  }
  if (baseline) md.push(...beforeAfter(rts, cases, by), "");
  const color = { a: "#9aa5b1", a2: "#7b8794", a3: "#616e7c", c2: "#9fb3c8", b: "#1f5fa8", c: "#b8c2cc", d: "#2f7ed8", d2: "#5a9be6", e: "#e4572e", f: "#f7a35c" };
  const maxCpu = Math.max(2, Math.ceil(Math.max(...cases.map((c) => c.cpuX).filter(Number.isFinite)) * 2) / 2);
  const svg = barChart({
    title: "Hot path: cost per request relative to the raw server of each runtime",
    subtitle: `GET / (5-byte body), wrk -t1 -c${CONNECTIONS}, server and wrk on separate cores, median of ${runs} round(s)`,
    panels: [
      { title: "server CPU per request ÷ raw (lower is better)", max: maxCpu, ticks: range(0, maxCpu, 0.5), mark: 1.1, markLabel: "1.10", value: (c) => c.cpuX, label: (c) => `${fmt.share(c.cpuX)}  (${fmt.us(c.cpuUsPerReq)} µs)` },
      { title: "req/s ÷ raw (higher is better)", max: 1.4, ticks: [0, 0.25, 0.5, 0.75, 1, 1.25], value: (c) => c.rpsX, label: (c) => `${fmt.share(c.rpsX)}  (${fmt.int(c.rps / 1000)}k)` },
    ],
    groups: rts.map((rt) => ({
      title: `${rt} ${env[rt]}`,
      rows: cases.filter((c) => c.rt === rt).map((c) => ({ ...c, name: c.label.length > 58 ? c.label.slice(0, 56) + "…" : c.label, color: c.before ? "#c9d6e8" : color[c.id] })),
    })),
    labelWidth: 410,
  });
  const summary = cases.map((c) => `${c.rt} ${c.id}: ${fmt.int(c.rps)} req/s, CPU ${fmt.us(c.cpuUsPerReq)} µs/req (÷ raw ${fmt.share(c.cpuX)}, ÷ Hono ${fmt.share(c.cpuXHono)}), non-2xx ${c.non2xx}`).join("\n");
  const json = { env, baseline: baseline && { ref: baseline.ref, commit: baseline.commit }, cases: cases.map(({ tree, ...c }) => c) };
  const name = slices === 1 ? "hot-path" : "hot-path-sliced";
  return { files: { [`${name}.md`]: md.join("\n"), [`${name}.svg`]: svg, [`${name}.json`]: JSON.stringify(json, null, 1) }, summary };
}

/** The issue's hot-path targets, one line each, with the "before" figure next to it when there is one. */
function targets(rts, by, baseline, cases) {
  const lines = [];
  const verdict = (ok) => (ok ? "met" : "**missed**");
  const pair = (rt, id, key) => {
    const after = by(rt, id)?.[key];
    const before = baseline ? by(rt, `${id}-before`)?.[key] : undefined;
    const ref = by(rt, key === "cpuXHono" ? "c" : "a");
    return { after, text: `${fmt.share(after)}× (per-run ratios ${ratioSpread(by(rt, id), ref)}${quiet(by(rt, id), ref)})${baseline ? ` (before ${fmt.share(before)}×)` : ""}` };
  };
  const quiet = (c, ref) => {
    const q = quietRatio(c, ref, cases);
    return `; quiet runs ${fmt.share(q.ratio)}×, ${q.quiet} of ${q.of}`;
  };
  for (const rt of rts) {
    const refKey = TARGET_REF[rt] === "c" ? "cpuXHono" : "cpuX";
    const refName = TARGET_REF[rt] === "c" ? "bare Hono on @hono/node-server" : "the raw server";
    const b = pair(rt, "b", refKey);
    lines.push(`- ${rt}: serve(), every gate on: CPU/req ${b.text} ${refName} (target ≤ 1.10) — ${verdict(b.after <= 1.1)}.`);
    // The floor a per-IP key sets: the raw server that also reads every request's peer.
    const a3 = by(rt, "a3");
    if (a3) lines.push(`  - the same ÷ (a3), the raw server reading each request's peer as a keyed gate must: ${fmt.share(ratioInRounds(by(rt, "b"), a3))}× ((a3) itself ${fmt.share(a3.cpuX)}× raw).`);
    const d2 = pair(rt, "d2", "cpuXHono");
    lines.push(`- ${rt}: Hono served by serve(): CPU/req ${d2.text} bare Hono (no separate target; shown as in the issue's table).`);
    if (rt === "node") {
      const f = by(rt, "f"), bb = by(rt, "b");
      lines.push(`- node: serve() below Fastify + @fastify/rate-limit + @fastify/under-pressure: ${fmt.us(bb?.cpuUsPerReq)} vs ${fmt.us(f?.cpuUsPerReq)} µs/req` +
        `${baseline ? ` (before ${fmt.us(by(rt, "b-before")?.cpuUsPerReq)})` : ""} — ${verdict(bb?.cpuUsPerReq < f?.cpuUsPerReq)}.`);
    }
    const d = pair(rt, "d", "cpuXHono");
    lines.push(`- ${rt}: hygiene() middleware: CPU/req ${d.text} bare Hono (target ≤ 1.20) — ${verdict(d.after <= 1.2)}.`);
    // What Hono charges for any middleware at all, and what hygiene() adds on top of that.
    const c2 = by(rt, "c2");
    if (c2) lines.push(`  - Hono's own cost of one middleware, (c2) a no-op one: ${fmt.share(c2.cpuXHono)}× bare Hono; hygiene() ÷ (c2): ${fmt.share(ratioInRounds(by(rt, "d"), c2))}× (per-run ratios ${ratioSpread(by(rt, "d"), c2)}${quiet(by(rt, "d"), c2)}).`);
    const libs = ["b", "d2", "d"].map((id) => by(rt, id)).filter(Boolean);
    const refused = libs.reduce((n, c) => n + c.non2xx + c.errors, 0);
    const before = baseline ? ["b", "d2", "d"].map((id) => by(rt, `${id}-before`)).filter(Boolean).reduce((n, c) => n + c.non2xx + c.errors, 0) : undefined;
    lines.push(`- ${rt}: no hot-path refusal: ${refused} non-2xx/errors across the serve-hygiene subjects${before === undefined ? "" : ` (before ${before})`} — ${verdict(refused === 0)}.`);
  }
  return lines;
}

/** Before and after side by side, per runtime: the figures the closing note quotes. */
function beforeAfter(rts, cases, by) {
  const out = ["## Before / after (same rounds)", ""];
  for (const rt of rts) {
    out.push(`### ${rt}`, "", table(
      ["subject", "CPU µs/req before", "after", "after ÷ before (in runs)", "÷ (a) raw before", "after", "÷ (c) bare Hono before", "after", "non-2xx before", "after"],
      cases.filter((c) => c.rt === rt && c.lib && !c.before).map((c) => {
        const p = by(rt, `${c.id}-before`);
        return [c.label.replace(/ — after$/, ""), fmt.us(p?.cpuUsPerReq), fmt.us(c.cpuUsPerReq), fmt.share(ratioInRounds(c, p)),
          fmt.share(p?.cpuX), fmt.share(c.cpuX), fmt.share(p?.cpuXHono), fmt.share(c.cpuXHono), fmt.int(p?.non2xx), fmt.int(c.non2xx)];
      }),
    ), "");
  }
  return out;
}

function range(from, to, step) {
  const out = [];
  for (let v = from; v <= to + 1e-9; v += step) out.push(Math.round(v * 100) / 100);
  return out;
}
