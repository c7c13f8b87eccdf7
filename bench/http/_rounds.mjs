// Rounds of CPU-per-request runs, shared by part 1 (hot path) and part 6 (refusal cost):
// every case once per round, in order, each run on a freshly started server; the figure is
// the median over rounds, and every ratio is taken inside a round (case ÷ reference of the
// same round) before its median is taken.
import { cpuSeconds, currentTree, load, median, startServer, stopServer, undisturbed } from "./_lib.mjs";
import { fmt } from "./_report.mjs";

/**
 * A case: `{ rt, id, label, file, variant, tree?, prepare?(server) }`. `prepare` runs after the
 * server listens and before the warm-up (part 6 parks its held request there) and may return
 * a function that undoes it. Each run records req/s, p99, server CPU µs per request, non-2xx
 * responses, socket errors, and the server's last printed refusal counts by layer.
 */
export async function runRounds({ cases, runs, warmS, seconds, connections, gen, path = "/" }) {
  for (const c of cases) c.runs = [];
  for (let run = 1; run <= runs; run++) {
    for (const c of cases) {
      const m = await oneRun(c, { warmS, seconds, connections, gen, path }).catch((error) => ({ failed: String(error?.message ?? error).split("\n")[0] }));
      c.runs.push(m);
      const head = `  run ${run} ${c.rt.padEnd(4)} ${c.label.padEnd(76)}`;
      if (m.failed) {
        console.log(`${head} FAILED: ${m.failed}`);
        continue;
      }
      console.log(
        `${head} ${fmt.int(m.rps).padStart(7)} req/s  p99 ${fmt.ms(m.p99Us).padStart(6)} ms  ${fmt.us(m.cpuUsPerReq).padStart(5)} µs CPU/req  server CPU ${fmt.pct(m.cpuShare)}` +
          `  non-2xx ${m.non2xx}${m.errors ? `  socket errors ${m.errors}` : ""}${m.denials ? `  refusals since start ${m.denials}` : ""}` +
          (m.noise >= 0.1 ? `  (others used ${Math.round(m.noise * 100)}% of a core)` : ""),
      );
    }
  }
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

async function oneRun(c, { warmS, seconds, connections, gen, path }) {
  const server = await startServer(c.rt, c.file, [c.variant], { tree: c.tree ?? currentTree });
  let undo;
  try {
    undo = await c.prepare?.(server);
    await load(gen, { port: server.port, path, connections, seconds: warmS });
    const { result: [r, cpu], noise } = await undisturbed(seconds, async () => {
      const cpu0 = cpuSeconds(server.pid);
      const r = await load(gen, { port: server.port, path, connections, seconds });
      return [r, cpuSeconds(server.pid) - cpu0];
    }, `${c.rt} ${c.id}`);
    await stopServer(server);
    const denials = [...server.log().matchAll(/\{"denials":(\{[^}]*\})\}/g)].at(-1)?.[1];
    return {
      noise,
      requests: r.requests,
      rps: r.requests / r.seconds,
      p99Us: r.p99Us,
      cpuUsPerReq: (cpu * 1e6) / r.requests,
      cpuShare: cpu / r.seconds,
      non2xx: r.non2xx,
      non2xxShare: r.non2xx / Math.max(1, r.requests),
      errors: r.connectErrors + r.readErrors + r.writeErrors + r.timeouts,
      ...(denials ? { denials } : {}),
    };
  } finally {
    undo?.();
    await stopServer(server);
  }
}

/**
 * CPU per request of `c` ÷ that of `ref`, taken round by round (both ran in the same round),
 * then the median over rounds; NaN when either is missing.
 */
export function ratioInRounds(c, ref, key = "cpuUsPerReq") {
  if (!c || !ref) return NaN;
  const ratios = c.runs.map((m, i) => (m.failed || ref.runs[i]?.failed ? NaN : m[key] / ref.runs[i][key]));
  return median(ratios);
}
