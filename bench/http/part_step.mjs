// Part 2b: a step from overload back to normal (issue 14). serve-hygiene with its defaults
// runs under a closed-loop storm (wrk -c256) for 3 s, then at half of capacity (paced) for
// 3 s. The server prints its gate state every 50 ms (BENCH_TRACE): the concurrency limit,
// permits in use, waiters, the load monitor's admitted share, and refusals so far. Targets:
// full admission within 1 s of the step (no refusal after it), and no oscillation (the limit
// holds steady in the normal phase; the share stays at 1). Chart: the limit and the share
// over time → overload-step.svg.
import { load, median, sleep, startServer, stopServer, undisturbed } from "./_lib.mjs";
import { envBlock, fmt, table } from "./_report.mjs";

const STORM_S = 3;
const NORMAL_S = 3;
const HANDLERS = [["/burn", "sync"], ["/burn-async", "async"], ["/io", "io"]];

/** The unprotected server's 2xx/s on `path` (2 s closed loop): what "capacity" means for this round. */
async function capacity(gen, rt, path) {
  const server = await startServer(rt, rt, ["none"]);
  try {
    await load(gen, { port: server.port, path, connections: 256, seconds: 1, timeoutS: 30 });
    await sleep(500);
    const r = await load(gen, { port: server.port, path, connections: 256, seconds: 2, timeoutS: 30, latency2xx: true });
    return r.ok / r.seconds;
  } finally {
    await stopServer(server);
  }
}

async function stepRun(gen, rt, path, cap) {
  const server = await startServer(rt, rt, ["lib", "-"], { env: { BENCH_TRACE: "1" } });
  const t0 = performance.now();
  try {
    const storm = await load(gen, { port: server.port, path, connections: 256, seconds: STORM_S, timeoutS: 30, latency2xx: true });
    const stepAt = performance.now() - t0;
    const normal = await load(gen, { port: server.port, path, connections: 64, seconds: NORMAL_S, timeoutS: 30, latency2xx: true, rate: cap / 2 });
    await sleep(200);
    const trace = server.log().split("\n").filter((l) => l.startsWith("TRACE ")).map((l) => JSON.parse(l.slice(6)));
    return { stepAt, storm, normal, trace };
  } finally {
    await stopServer(server);
  }
}

const deniedOf = (s) => Object.values(s.denied).reduce((n, v) => n + v, 0);

/** What one step run shows: when the last refusal came after the step, how steady the limit and the share were after it. */
function analyse({ stepAt, normal, trace }) {
  const after = trace.filter((s) => s.t >= stepAt);
  const atStep = trace.filter((s) => s.t < stepAt).at(-1) ?? trace[0];
  let lastDenial = undefined;
  let lastGateDenial = undefined; // the concurrency gate's own (items 1–2), apart from the load monitor's
  for (let i = 1; i < trace.length; i++) {
    if (trace[i].t < stepAt) continue;
    if (deniedOf(trace[i]) > deniedOf(trace[i - 1])) lastDenial = trace[i].t - stepAt;
    if ((trace[i].denied.concurrency ?? 0) > (trace[i - 1].denied.concurrency ?? 0)) lastGateDenial = trace[i].t - stepAt;
  }
  const settled = after.filter((s) => s.t >= stepAt + 1000);
  const limits = settled.map((s) => s.limit);
  const med = median(limits);
  const swing = limits.length ? Math.max(...limits.map((l) => Math.abs(l - med) / med)) : NaN;
  const minShare = settled.length ? Math.min(...settled.map((s) => s.share)) : NaN;
  return {
    refusedAfterStep: atStep === undefined ? NaN : deniedOf(trace.at(-1)) - deniedOf(atStep),
    byLayerAfterStep: Object.fromEntries(Object.keys(trace.at(-1)?.denied ?? {}).map((k) => [k, (trace.at(-1).denied[k] ?? 0) - (atStep?.denied[k] ?? 0)])),
    lastDenialMs: lastDenial,
    lastGateDenialMs: lastGateDenial,
    normalRefused: normal.refused,
    normalOk: normal.ok,
    limitAtStep: atStep?.limit,
    limitMedian: med,
    limitSwing: swing,
    minShareSettled: minShare,
  };
}

export async function step({ runs, runtimes, gen, env }) {
  const cases = [];
  for (const rt of runtimes) for (const [path, kind] of HANDLERS) cases.push({ rt, path, kind, runs: [] });
  for (let run = 1; run <= runs; run++) {
    for (const c of cases) {
      const { result } = await undisturbed(STORM_S + NORMAL_S + 4, async () => {
        const cap = await capacity(gen, c.rt, c.path);
        return { cap, ...(await stepRun(gen, c.rt, c.path, cap)) };
      }, `${c.rt} ${c.kind} step`);
      const a = analyse(result);
      c.runs.push({ ...a, cap: result.cap, stepAt: result.stepAt, trace: result.trace });
      console.log(
        `  run ${run} ${c.rt.padEnd(4)} ${c.kind.padEnd(5)} capacity ${fmt.int(result.cap)}/s; after the step: refusals ${a.refusedAfterStep} ${JSON.stringify(a.byLayerAfterStep)} (last ${a.lastDenialMs === undefined ? "—" : `${Math.round(a.lastDenialMs)} ms`} after it; the concurrency gate's last ${a.lastGateDenialMs === undefined ? "—" : `${Math.round(a.lastGateDenialMs)} ms`}), ` +
          `paced phase 2xx ${a.normalOk} / 503 ${a.normalRefused}; limit ${a.limitAtStep} at the step, ${a.limitMedian} median after 1 s (swing ±${fmt.pct(a.limitSwing)}), share ≥ ${fmt.share(a.minShareSettled)}`,
      );
    }
  }
  const verdicts = [];
  const rows = [];
  for (const c of cases) {
    const within = c.runs.map((r) => r.lastDenialMs === undefined || r.lastDenialMs <= 1000);
    const steady = c.runs.map((r) => r.limitSwing <= 0.25 && r.minShareSettled >= 0.99);
    const lastMs = median(c.runs.map((r) => r.lastDenialMs ?? 0));
    const lastGateMs = median(c.runs.map((r) => r.lastGateDenialMs ?? 0));
    const layers = [...new Set(c.runs.flatMap((r) => Object.keys(r.byLayerAfterStep)))].map((k) => `${k} ${fmt.int(median(c.runs.map((r) => r.byLayerAfterStep[k] ?? 0)))}`).join(", ");
    rows.push([`${c.rt} ${c.kind}`, fmt.int(median(c.runs.map((r) => r.cap))), `${fmt.int(median(c.runs.map((r) => r.refusedAfterStep)))}${layers ? ` (${layers})` : ""}`, `${Math.round(lastMs)} ms (concurrency gate: ${Math.round(lastGateMs)} ms)`,
      fmt.int(median(c.runs.map((r) => r.normalRefused))), fmt.int(median(c.runs.map((r) => r.limitAtStep))), fmt.int(median(c.runs.map((r) => r.limitMedian))),
      `±${fmt.pct(median(c.runs.map((r) => r.limitSwing)))}`, fmt.share(median(c.runs.map((r) => r.minShareSettled)))]);
    verdicts.push(`- ${c.rt}, ${c.kind}: full admission within 1 s of the step in ${within.filter(Boolean).length} of ${c.runs.length} runs (last refusal ${Math.round(lastMs)} ms after it, median) ${within.every(Boolean) ? "met" : "**missed**"}; ` +
      `no oscillation (limit within ±25% of its median and share 1 from 1 s on) in ${steady.filter(Boolean).length} of ${c.runs.length} ${steady.every(Boolean) ? "met" : "**missed**"}.`);
  }
  const md = [
    `# Part 2b — a step from overload back to normal`,
    "",
    `serve-hygiene with its defaults; wrk -t1 -c256 closed loop for ${STORM_S} s (the storm), then at once wrk paced at half of capacity (half the unprotected server's 2xx/s, measured just before in the same round) with 64 connections for ${NORMAL_S} s. The server prints its gate state every 50 ms.`,
    `"Refusals after the step" counts the server's refusals (onDeny, every layer) from the step to the end; "last refusal" is when the last of them came, after the step. Median of ${runs} round(s).`,
    "",
    envBlock(env, `Library: ${env.current}.`),
    "",
    "Targets:",
    "",
    ...verdicts,
    "",
    table(["runtime, handler", "capacity 2xx/s", "refusals after the step (by layer)", "last refusal after the step", "503 in the paced phase (wrk)", "limit at the step", "limit after 1 s (median)", "limit swing after 1 s", "min share after 1 s"], rows),
    "",
    "![The limit and the load monitor's share over time](overload-step.svg)",
    "",
  ];
  const svg = stepChart(cases, runs);
  return { files: { "overload-step.md": md.join("\n"), "overload-step.svg": svg, "overload-step.json": JSON.stringify({ env, cases }, null, 1) }, summary: verdicts.join("\n") };
}

/** One panel per runtime × handler: the limit (log scale, left) and the share (0–1, right) over time, every round, the step marked. */
function stepChart(cases, runs) {
  const pw = 330, ph = 150, padL = 46, padR = 36, padT = 60, gapY = 44, cols = 3;
  const rowsN = Math.ceil(cases.length / cols);
  const width = cols * (pw + padL + padR) + 20, height = padT + rowsN * (ph + gapY) + 20;
  const tMax = (STORM_S + NORMAL_S) * 1000 + 500;
  const maxLimit = Math.max(2, ...cases.flatMap((c) => c.runs.flatMap((r) => r.trace.map((s) => s.limit)).filter(Number.isFinite)));
  const logTop = Math.ceil(Math.log10(maxLimit));
  const out = [`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="Helvetica, Arial, sans-serif" font-size="11">`, `<rect width="100%" height="100%" fill="#fff"/>`];
  out.push(`<text x="10" y="20" font-size="15" font-weight="bold">A step from overload (wrk -c256) to half of capacity: the adaptive limit and the load monitor's share</text>`);
  out.push(`<text x="10" y="38" fill="#555">blue: concurrency limit (log scale, left); orange: admitted share (0–1, right); red marks: refusals in that 50 ms; dashed: the step; ${runs} round(s) overlaid</text>`);
  cases.forEach((c, i) => {
    const x0 = 10 + (i % cols) * (pw + padL + padR) + padL, y0 = padT + Math.floor(i / cols) * (ph + gapY);
    const X = (t) => x0 + (Math.max(0, Math.min(tMax, t)) / tMax) * pw;
    const YL = (l) => y0 + ph - (Math.log10(Math.max(1, l)) / logTop) * ph;
    const YS = (s) => y0 + ph - s * ph;
    out.push(`<text x="${x0}" y="${y0 - 8}" font-weight="bold">${c.rt} — ${c.kind} (${c.path})</text>`);
    out.push(`<rect x="${x0}" y="${y0}" width="${pw}" height="${ph}" fill="none" stroke="#ccc"/>`);
    for (let d = 0; d <= logTop; d++) {
      out.push(`<line x1="${x0}" x2="${x0 + pw}" y1="${YL(10 ** d)}" y2="${YL(10 ** d)}" stroke="#eee"/><text x="${x0 - 4}" y="${YL(10 ** d) + 4}" text-anchor="end" fill="#1f5fa8">${10 ** d}</text>`);
    }
    for (const s of [0, 0.5, 1]) out.push(`<text x="${x0 + pw + 4}" y="${YS(s) + 4}" fill="#e67e22">${s}</text>`);
    for (let t = 0; t <= tMax; t += 1000) out.push(`<text x="${X(t)}" y="${y0 + ph + 14}" text-anchor="middle" fill="#777">${t / 1000} s</text>`);
    const stepAt = median(c.runs.map((r) => r.stepAt));
    out.push(`<line x1="${X(stepAt)}" x2="${X(stepAt)}" y1="${y0}" y2="${y0 + ph}" stroke="#c0392b" stroke-dasharray="4 3"/>`);
    for (const r of c.runs) {
      const line = (pts, color) => out.push(`<polyline fill="none" stroke="${color}" stroke-width="1.3" stroke-opacity="0.8" points="${pts.map(([x, y]) => `${x.toFixed(1)},${y.toFixed(1)}`).join(" ")}"/>`);
      line(r.trace.map((s) => [X(s.t), YL(s.limit)]), "#1f5fa8");
      line(r.trace.map((s) => [X(s.t), YS(s.share)]), "#e67e22");
      for (let k = 1; k < r.trace.length; k++) {
        if (deniedOf(r.trace[k]) > deniedOf(r.trace[k - 1])) out.push(`<line x1="${X(r.trace[k].t)}" x2="${X(r.trace[k].t)}" y1="${y0 + ph - 6}" y2="${y0 + ph}" stroke="#c0392b"/>`);
      }
    }
  });
  out.push("</svg>");
  return out.join("\n") + "\n";
}
