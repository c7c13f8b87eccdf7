// Rounds of CPU-per-request runs, shared by part 1 (hot path) and part 6 (refusal cost):
// every case once per round, in order, each run on a freshly started server; the figure is
// the median over rounds, and every ratio is taken inside a round (case ÷ reference of the
// same round) before its median is taken.
// `slices` > 1 (`--slices=N`) measures finer, as a cross-check: this machine's speed moves by
// up to 2× over seconds (`scripts/probes/machine_speed.mjs`), and a round takes minutes. Each
// round then starts every case of a runtime on a fresh server and warms each up, then measures
// them in N slices of `seconds / N` in turn (the order reversed every other slice), each after
// a 1 s re-warm; every ratio is taken inside a slice. The servers idle through the other cases'
// slices, which the one-run-per-case flow never does, so the two flows are not the same
// measurement: the sliced one read serve-hygiene's subjects higher on Deno and Bun (bench/README.md).
// Either way the machine's speed is timed on the server core before each measured run (quietRatio).
import { cpuSeconds, currentTree, endMachineSpeed, load, machineSpeedMs, median, startServer, stopServer, undisturbed } from "./_lib.mjs";
import { fmt } from "./_report.mjs";

/**
 * A case: `{ rt, id, label, file, variant, tree?, prepare?(server) }`. `prepare` runs after the
 * server listens and before the warm-up (part 6 parks its held request there) and may return
 * a function that undoes it. Each measured run (a round's, or a slice of one) records req/s,
 * p99, server CPU µs per request, non-2xx responses, socket errors and the machine's speed
 * before it; a round's last also the server's last printed refusal counts by layer. `c.runs`
 * holds them in the same order for every case.
 */
export async function runRounds({ cases, runs, warmS, seconds, slices = 1, connections, gen, path = "/" }) {
  for (const c of cases) c.runs = [];
  const opts = { warmS, connections, gen, path };
  const groups = [...new Set(cases.map((c) => c.rt))].map((rt) => cases.filter((c) => c.rt === rt));
  for (let run = 1; run <= runs; run++) {
    if (slices === 1) await oneRunEach(cases, run, seconds, opts);
    else for (const group of groups) await sliced(group, run, slices, seconds / slices, opts);
  }
  endMachineSpeed();
  for (const c of cases) {
    const ok = c.runs.filter((m) => !m.failed);
    for (const k of ["rps", "p99Us", "cpuUsPerReq", "cpuShare", "non2xxShare"]) c[k] = median(ok.map((m) => m[k]));
    c.non2xx = ok.reduce((n, m) => n + m.non2xx, 0);
    c.requests = ok.reduce((n, m) => n + m.requests, 0);
    c.errors = ok.reduce((n, m) => n + m.errors, 0);
    c.failed = c.runs.length - ok.length;
    c.denials = [...new Set(ok.map((m) => m.denials).filter(Boolean))].join("; ");
  }
  return cases;
}

const firstLine = (error) => String(error?.message ?? error).split("\n")[0];

/** One run per case: start, warm up, measure, stop, before the next case starts. */
async function oneRunEach(cases, run, seconds, opts) {
  for (const c of cases) {
    const l = await startCase(c, opts);
    try {
      c.runs.push(await measureCase(l, seconds, 0, opts));
    } finally {
      await stopCase(l);
    }
    report(c, c.runs.at(-1), `run ${run}`);
  }
}

/** Every case of `group` live at once, measured in `slices` slices of `sliceS` in turn. */
async function sliced(group, run, slices, sliceS, opts) {
  const live = [];
  try {
    for (const c of group) live.push(await startCase(c, opts));
    for (let slice = 0; slice < slices; slice++) {
      const order = slice % 2 === 0 ? live : [...live].reverse();
      const measured = new Map();
      for (const l of order) measured.set(l, await measureCase(l, sliceS, 1, opts));
      for (const l of live) l.c.runs.push(measured.get(l));
    }
  } finally {
    for (const l of live) await stopCase(l);
  }
  for (const l of live) report(l.c, l.c.runs.at(-1), `run ${run} (${slices} slices)`);
}

/** A measured run of a started case, or its failure. */
function measureCase(l, seconds, rewarmS, { connections, gen, path }) {
  if (l.failed) return { failed: l.failed };
  return measure(l, { seconds, rewarmS, connections, gen, path }).catch((error) => ({ failed: firstLine(error) }));
}

/** Starts a case's server, runs its `prepare`, and warms it up; a failure is kept, not thrown. */
async function startCase(c, { warmS, connections, gen, path }) {
  const l = { c };
  try {
    l.server = await startServer(c.rt, c.file, [c.variant], { tree: c.tree ?? currentTree });
    l.undo = await c.prepare?.(l.server);
    await load(gen, { port: l.server.port, path, connections, seconds: warmS });
  } catch (error) {
    l.failed = firstLine(error);
  }
  return l;
}

/** Stops a case's server and keeps its last printed refusal counts on its last run. */
async function stopCase(l) {
  l.undo?.();
  if (l.server === undefined) return;
  await stopServer(l.server);
  const denials = [...l.server.log().matchAll(/\{"denials":(\{[^}]*\})\}/g)].at(-1)?.[1];
  const last = l.c.runs.at(-1);
  if (denials && last && !last.failed) last.denials = denials;
}

/** One measured run of a live case: the server's CPU over the load run ÷ the requests. */
async function measure({ c, server }, { seconds, rewarmS, connections, gen, path }) {
  // A server idle through the other cases' slices starts cold (its heap shrunk, its threads parked): load it again first.
  if (rewarmS > 0) await load(gen, { port: server.port, path, connections, seconds: rewarmS });
  // The machine's speed on the server's core just before the run (see quietRatio).
  const speedMs = await machineSpeedMs();
  const { result: [r, cpu], noise } = await undisturbed(seconds, async () => {
    const cpu0 = cpuSeconds(server.pid);
    const r = await load(gen, { port: server.port, path, connections, seconds });
    return [r, cpuSeconds(server.pid) - cpu0];
  }, `${c.rt} ${c.id}`);
  return {
    noise,
    speedMs,
    requests: r.requests,
    rps: r.requests / r.seconds,
    p99Us: r.p99Us,
    cpuUsPerReq: (cpu * 1e6) / r.requests,
    cpuShare: cpu / r.seconds,
    non2xx: r.non2xx,
    non2xxShare: r.non2xx / Math.max(1, r.requests),
    errors: r.connectErrors + r.readErrors + r.writeErrors + r.timeouts,
  };
}

/** One line per case and round (sliced: the round's last slice; the figures are medians over all runs). */
function report(c, m, what) {
  const head = `  ${what} ${c.rt.padEnd(4)} ${c.label.padEnd(76)}`;
  if (m.failed) return console.log(`${head} FAILED: ${m.failed}`);
  console.log(
    `${head} ${fmt.int(m.rps).padStart(7)} req/s  p99 ${fmt.ms(m.p99Us).padStart(6)} ms  ${fmt.us(m.cpuUsPerReq).padStart(5)} µs CPU/req  server CPU ${fmt.pct(m.cpuShare)}` +
      `  non-2xx ${m.non2xx}${m.errors ? `  socket errors ${m.errors}` : ""}${m.denials ? `  refusals since start ${m.denials}` : ""}` +
      (m.noise >= 0.1 ? `  (others used ${Math.round(m.noise * 100)}% of a core)` : ""),
  );
}

/** `c`'s per-run ratios to `ref` (each inside one round, or one slice), failed runs left out. */
function ratios(c, ref, key) {
  if (!c || !ref) return [];
  return c.runs.map((m, i) => (m.failed || ref.runs[i]?.failed ? NaN : m[key] / ref.runs[i][key])).filter(Number.isFinite);
}

/**
 * CPU per request of `c` ÷ that of `ref`, taken run by run (both ran in the same round, or the
 * same slice of it), then the median over all runs; NaN when either is missing.
 */
export function ratioInRounds(c, ref, key = "cpuUsPerReq") {
  const r = ratios(c, ref, key);
  return r.length === 0 ? NaN : median(r);
}

/**
 * The same median over the quiet runs only: those before which the machine's speed loop
 * (bench/http/_speed.mjs) ran within 1.25× its 10th-percentile time in the whole run, for both
 * cases (not its fastest: a rare fast moment left 0-2 slices of 12 quiet in a 3-round run).
 * A diagnostic beside the median of all runs, never instead of it: it says how much of a
 * ratio the host's contention made (a contended host slows the heavier server more).
 * Returns `{ ratio, quiet, of }`.
 */
export function quietRatio(c, ref, cases, key = "cpuUsPerReq") {
  if (!c || !ref) return { ratio: NaN, quiet: 0, of: 0 };
  const speeds = cases.flatMap((x) => x.runs.map((m) => m.speedMs)).filter(Number.isFinite).sort((a, b) => a - b);
  const quick = speeds[Math.floor(speeds.length / 10)];
  const quiet = (m) => m && !m.failed && m.speedMs <= 1.25 * quick;
  const r = c.runs.map((m, i) => (quiet(m) && quiet(ref.runs[i]) ? m[key] / ref.runs[i][key] : NaN)).filter(Number.isFinite);
  return { ratio: r.length === 0 ? NaN : median(r), quiet: r.length, of: c.runs.length };
}

/** The middle half of those per-run ratios, "p25–p75", to read a median's spread by. */
export function ratioSpread(c, ref, key = "cpuUsPerReq") {
  const r = ratios(c, ref, key).sort((a, b) => a - b);
  if (r.length === 0) return "–";
  const at = (q) => r[Math.min(r.length - 1, Math.floor(q * (r.length - 1) + 0.5))];
  return `${fmt.share(at(0.25))}–${fmt.share(at(0.75))}`;
}
