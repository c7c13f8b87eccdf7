// Reliability: a node:cluster app, seen from outside (test/fixtures/cluster_server.ts). A
// worker's IPC channel to its primary kept it alive after its drain: the primary, waiting for
// its workers, never exited, and a supervisor's SIGKILL would have taken the exit code (and,
// once it came, any request admitted later). Asserted: every admitted request is answered,
// each worker ends on its own with its drain's code, and so does the primary.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { runtime, startChild } from "../support/runtime.ts";
import { BOUND_MS, records, waitUntil, within } from "../support/reliability.ts";

/** Ends the primary and the workers it has not reaped (a reaped worker's PID may be another process's by now). */
function endAll(child: ReturnType<typeof startChild>, pids: readonly number[]): void {
  child.kill();
  const reaped = new Set(records(child, "workerExit").map((r) => r.pid));
  for (const pid of pids) {
    if (reaped.has(pid)) continue;
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
}

describe(`reliability (${runtime}): node:cluster`, () => {
  // Deno's node:cluster reports a worker its primary signalled as exited at once, while it
  // still drains (scripts/probes/deno_cluster_kill.ts): there the workers are signalled
  // directly, as a control-group stop (systemd) does.
  const to = runtime === "deno" ? "each worker" : "a cluster's primary, forwarded to its workers";
  const sigterm = async (env: Record<string, string>) => {
    const child = startChild("test/fixtures/cluster_server.ts", { WORKERS: "2", WORK_MS: "400", FORWARD: runtime === "deno" ? "0" : "1", ...env });
    let pids: number[] = [];
    try {
      const ready = JSON.parse(await child.waitForLine(/"listening":true/, BOUND_MS)) as { ports: number[]; pids: number[] };
      pids = ready.pids;
      assert.equal(ready.ports.length, 2);
      const answers = ready.ports.flatMap((port) =>
        [0, 1].map(() => fetch(`http://127.0.0.1:${port}/slow`).then(async (r) => `${r.status} ${await r.text()}`, (e: unknown) => `failed ${String(e)}`))
      );
      await waitUntil(() => records(child, "started").length === 4, () => `four requests started; stdout:\n${child.stdout()}`);
      if (runtime === "deno") for (const pid of pids) process.kill(pid, "SIGTERM");
      else child.kill("SIGTERM");
      assert.deepEqual(await within(Promise.all(answers), "the answers"), ["200 done", "200 done", "200 done", "200 done"]);
      const code = await within(child.exited, `the primary's exit; stdout:\n${child.stdout()}\nstderr:\n${child.stderr()}`);
      assert.equal(code, 0, child.stderr());
      assert.deepEqual(records(child, "workerExit").map((r) => r.workerExit), [0, 0]);
    } finally {
      endAll(child, pids);
    }
  };

  test(`reliability (${runtime}): SIGTERM to ${to}: every admitted request answered, each worker ends on its own after its drain, exit 0`, { timeout: 60_000 }, () => sigterm({}));

  // The multiprocess review: a group-wide stop (systemd's default KillMode, a signal to the process
  // group) gives each worker SIGTERM itself and again through its primary; the second, after
  // the worker's drain, ends it by the signal, which the README's primary read as a failure (exit 1).
  test(`reliability (${runtime}): SIGTERM to every process of a cluster: a worker ended by the signal its primary passed on after its drain is no failure, exit 0${runtime === "deno" ? " (node and bun only; skipped on deno)" : ""}`, { timeout: 60_000, skip: runtime === "deno" }, async () => {
    const child = startChild("test/fixtures/cluster_server.ts", { WORKERS: "2", FORWARD: "1", HOLD_MS: "5000" });
    let pids: number[] = [];
    try {
      pids = (JSON.parse(await child.waitForLine(/"listening":true/, BOUND_MS)) as { pids: number[] }).pids;
      for (const pid of pids) process.kill(pid, "SIGTERM");
      await waitUntil(() => records(child, "drained").length === 2, () => `both workers drained; stdout:\n${child.stdout()}`);
      child.kill("SIGTERM"); // the primary's share of the stop: it passes the signal on to the workers, still holding
      const code = await within(child.exited, `the primary's exit; stdout:\n${child.stdout()}\nstderr:\n${child.stderr()}`);
      assert.deepEqual(records(child, "workerExit").map((r) => r.workerExit), ["SIGTERM", "SIGTERM"]);
      assert.equal(code, 0);
    } finally {
      endAll(child, pids);
    }
  });

  // A review: the first drain let the IPC channel go, and a worker's second listen, which waits
  // on its primary there, died with the process (the primary then crashed on EPIPE).
  test(`reliability (${runtime}): a worker that drained one server and serves again in-process is served, then ends on its own after its second drain`, { timeout: 60_000 }, () => sigterm({ RESTART: "1" }));
});
