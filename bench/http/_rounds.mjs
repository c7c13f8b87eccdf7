// Rounds of CPU-per-request runs, shared by part 1 (hot path) and part 6 (refusal cost).
// This machine's speed moves by up to 2× over seconds (`scripts/probes/machine_speed.mjs`:
// a fixed memory-bound loop on the server's core), so a ratio of two runs a minute apart
// measures the machine as much as the code. Each round therefore starts every case of a
// runtime on a fresh server, warms each up, then measures them in short slices in turn
// (`slices` of `seconds / slices` each, the order reversed every other slice): the cases of
// one slice run seconds apart, and every ratio is taken inside a slice (case ÷ reference of
// the same slice) before its median over all slices of all rounds is taken.
import { cpuSeconds, currentTree, endMachineSpeed, load, machineSpeedMs, median, startServer, stopServer, undisturbed } from "./_lib.mjs";
import { fmt } from "./_report.mjs";

/**
 * A case: `{ rt, id, label, file, variant, tree?, prepare?(server) }`. `prepare` runs after the
 * server listens and before the warm-up (part 6 parks its held request there) and may return
 * a function that undoes it. Each slice records req/s, p99, server CPU µs per request, non-2xx
 * responses and socket errors; the last slice of a round also the server's last printed
 * refusal counts by layer. `c.runs` holds the slices, in the same order for every case.
 */
export async function runRounds({ cases, runs, warmS, seconds, slices = 1, connections, gen, path = "/" }) {
  for (const c of cases) c.runs = [];
  const sliceS = seconds / slices;
  const groups = [...new Set(cases.map((c) => c.rt))].map((rt) => cases.filter((c) => c.rt === rt));
  for (let run = 1; run <= runs; run++) {
    for (const group of groups) {
      const live = [];
      try {
        for (const c of group) live.push(await startCase(c, { warmS, connections, gen, path }));
        for (let slice = 0; slice < slices; slice++) {
          const order = slice % 2 === 0 ? live : [...live].reverse();
          const measured = new Map();
          for (const l of order) measured.set(l.c, l.failed ? { failed: l.failed } : await measure(l, { seconds: sliceS, rewarmS: slices > 1 ? 1 : 0, connections, gen, path }).catch((error) => ({ failed: firstLine(error) })));
          for (const l of live) {
            const m = measured.get(l.c);
            l.c.runs.push(m);
            if (slice === slices - 1) report(l.c, m, `run ${run}${slices > 1 ? ` (${slices} slices)` : ""}`);
          }
        }
      } finally {
        for (const l of live) {
          l.undo?.();
          if (l.server) await stopServer(l.server);
          const denials = l.server && [...l.server.log().matchAll(/\{"denials":(\{[^}]*\})\}/g)].at(-1)?.[1];
          const last = l.c.runs.at(-1);
          if (denials && last && !last.failed) last.denials = denials;
        }
      }
    }
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

/** One measured slice of a live case: the server's CPU over the load run ÷ the requests. */
async function measure({ c, server }, { seconds, rewarmS, connections, gen, path }) {
  // A server idle for the other cases' slices starts cold (its heap shrunk, its threads parked): load it again first.
  if (rewarmS > 0) await load(gen, { port: server.port, path, connections, seconds: rewarmS });
  // The machine's speed on the server's core just before the slice (see quietRatio).
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

/** One line per case and round: the round's last slice (the figures are medians over all slices). */
function report(c, m, what) {
  const head = `  ${what} ${c.rt.padEnd(4)} ${c.label.padEnd(76)}`;
  if (m.failed) return console.log(`${head} FAILED: ${m.failed}`);
  console.log(
    `${head} ${fmt.int(m.rps).padStart(7)} req/s  p99 ${fmt.ms(m.p99Us).padStart(6)} ms  ${fmt.us(m.cpuUsPerReq).padStart(5)} µs CPU/req  server CPU ${fmt.pct(m.cpuShare)}` +
      `  non-2xx ${m.non2xx}${m.errors ? `  socket errors ${m.errors}` : ""}` +
      (m.noise >= 0.1 ? `  (others used ${Math.round(m.noise * 100)}% of a core)` : ""),
  );
}

/** `c`'s per-slice ratios to `ref` (each inside one slice), failed slices left out. */
function ratios(c, ref, key) {
  if (!c || !ref) return [];
  return c.runs.map((m, i) => (m.failed || ref.runs[i]?.failed ? NaN : m[key] / ref.runs[i][key])).filter(Number.isFinite);
}

/**
 * CPU per request of `c` ÷ that of `ref`, taken slice by slice (both ran in the same slice of
 * the same round), then the median over all slices; NaN when either is missing.
 */
export function ratioInRounds(c, ref, key = "cpuUsPerReq") {
  const r = ratios(c, ref, key);
  return r.length === 0 ? NaN : median(r);
}

/**
 * The same median over the quiet slices only: those before which the machine's speed loop
 * (bench/http/_speed.mjs) ran within 1.25× its fastest time in the whole run, for both cases.
 * A diagnostic beside the median of all slices, never instead of it: it says how much of a
 * ratio the host's contention made (a contended host slows the heavier server more).
 * Returns `{ ratio, quiet, of }`.
 */
export function quietRatio(c, ref, cases, key = "cpuUsPerReq") {
  if (!c || !ref) return { ratio: NaN, quiet: 0, of: 0 };
  const fastest = Math.min(...cases.flatMap((x) => x.runs.map((m) => m.speedMs)).filter(Number.isFinite));
  const quiet = (m) => m && !m.failed && m.speedMs <= 1.25 * fastest;
  const r = c.runs.map((m, i) => (quiet(m) && quiet(ref.runs[i]) ? m[key] / ref.runs[i][key] : NaN)).filter(Number.isFinite);
  return { ratio: r.length === 0 ? NaN : median(r), quiet: r.length, of: c.runs.length };
}

/** The middle half of those per-slice ratios, "p25–p75", to read a median's spread by. */
export function ratioSpread(c, ref, key = "cpuUsPerReq") {
  const r = ratios(c, ref, key).sort((a, b) => a - b);
  if (r.length === 0) return "–";
  const at = (q) => r[Math.min(r.length - 1, Math.floor(q * (r.length - 1) + 0.5))];
  return `${fmt.share(at(0.25))}–${fmt.share(at(0.75))}`;
}
