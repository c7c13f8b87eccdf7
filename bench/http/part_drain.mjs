// Part 4: drain under load. The library's server (defaults, exitOnDrained) under wrk -t1
// -c256 on /slow (each request waits 10 ms on a timer, so ~256 are in flight at any moment
// and the server is saturated); SIGTERM after 4 s of load. Admitted = calls that reached the
// handler (the server counts them and writes the count in its onDrained hook); a failed
// admitted request = admitted − 2xx responses wrk received (wrk runs on past the exit, so
// every response the server sent has been read). Also: time from the signal to the exit.
import { existsSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { load, median, sleep, startServer, stopServer } from "./_lib.mjs";
import { envBlock, fmt, table } from "./_report.mjs";

const CONNECTIONS = 256;

export async function drain({ runs, runtimes, quick, gen, env }) {
  const loadS = quick ? 6 : 9;
  const signalAfterMs = quick ? 2500 : 4000;
  const per = Object.fromEntries(runtimes.map((rt) => [rt, []]));
  for (let run = 1; run <= runs; run++) {
    for (const rt of runtimes) {
      const out = join(tmpdir(), `serve-hygiene-drain-${process.pid}-${rt}-${run}.json`);
      rmSync(out, { force: true });
      rmSync(`${out}.outcome`, { force: true });
      const server = await startServer(rt, rt, ["drain", "-", out]);
      try {
        const loading = load(gen, { port: server.port, path: "/slow", connections: CONNECTIONS, seconds: loadS, timeoutS: 10 });
        await sleep(signalAfterMs);
        const signalledAt = performance.now();
        process.kill(server.pid, "SIGTERM");
        const exit = await Promise.race([server.exited, sleep(40_000).then(() => undefined)]);
        const r = await loading;
        const counts = existsSync(out) ? JSON.parse(readFileSync(out, "utf8")) : undefined;
        const outcome = existsSync(`${out}.outcome`) ? JSON.parse(readFileSync(`${out}.outcome`, "utf8")) : undefined;
        const ok = r.requests - r.non2xx;
        const m = {
          exitMs: exit ? exit.at - signalledAt : NaN,
          exitCode: exit ? exit.code ?? exit.signal : "still running after 40 s",
          admitted: counts?.admitted ?? NaN,
          ok,
          failed: counts ? counts.admitted - ok : NaN,
          refused: r.non2xx,
          connectErrors: r.connectErrors,
          readErrors: r.readErrors,
          writeErrors: r.writeErrors,
          timeouts: r.timeouts,
          outcome: outcome?.outcome ?? "unknown",
          rps: ok / (signalAfterMs / 1000),
        };
        per[rt].push(m);
        console.log(
          `  run ${run} ${rt.padEnd(4)} admitted ${fmt.int(m.admitted)}, 2xx ${fmt.int(ok)}, failed ${m.failed}; 503 ${r.non2xx}; ` +
            `exit ${m.exitCode} (${m.outcome}) ${fmt.int(m.exitMs)} ms after SIGTERM; wrk errors connect ${r.connectErrors} read ${r.readErrors} write ${r.writeErrors} timeout ${r.timeouts}`,
        );
      } finally {
        await stopServer(server);
        rmSync(out, { force: true });
        rmSync(`${out}.outcome`, { force: true });
      }
    }
  }
  const rows = runtimes.map((rt) => {
    const ms = per[rt];
    return [
      rt,
      fmt.int(median(ms.map((m) => m.admitted))),
      ms.map((m) => m.failed).join(", "),
      fmt.int(median(ms.map((m) => m.exitMs))),
      ms.map((m) => `${m.exitCode} (${m.outcome})`).join(", "),
      fmt.int(median(ms.map((m) => m.refused))),
      fmt.int(median(ms.map((m) => m.readErrors + m.timeouts))),
      fmt.int(median(ms.map((m) => m.writeErrors + m.connectErrors))),
    ];
  });
  const allFailed = runtimes.flatMap((rt) => per[rt].map((m) => m.failed));
  const md = [
    `# Part 4 — drain under load`,
    "",
    `serve-hygiene's adapter with its defaults (drain window 25 s, request timeout 20 s), \`exitOnDrained\`. wrk -t1 -c${CONNECTIONS} on \`/slow\` (10 ms timer per request) for ${loadS} s; SIGTERM ${signalAfterMs / 1000} s in.`,
    `Admitted = handler calls, counted by the server and written by its onDrained hook; failed = admitted − 2xx received by wrk. wrk keeps running after the exit (it counts its reconnects to the closed listener as write errors). ${runs} run(s); every run is listed where it matters.`,
    "",
    envBlock(env),
    "",
    table(["runtime", "admitted (median)", "admitted that failed (each run)", "signal → exit ms (median)", "exit code (outcome), each run", "503 (median)", "wrk read errors + timeouts (median)", "wrk write/connect errors (median)"], rows),
    "",
    "503s are the draining gate's answers (and any load shedding before the signal); they were never admitted. A wrk read error is a connection the server closed while wrk had a request on it that the server never read (an idle keep-alive socket closed by the drain); write/connect errors are wrk reconnecting to a listener that has closed — neither is an admitted request.",
    "",
    `Target: 0 admitted requests failed — ${allFailed.every((f) => f === 0) ? "met in every run" : `**missed** (${allFailed.join(", ")})`}.`,
    "",
  ];
  const summary = runtimes.map((rt) => `${rt}: failed ${per[rt].map((m) => m.failed).join(",")}, exit ${fmt.int(median(per[rt].map((m) => m.exitMs)))} ms after SIGTERM`).join("\n");
  return { files: { "drain.md": md.join("\n"), "drain.json": JSON.stringify({ env, per }, null, 1) }, summary };
}
