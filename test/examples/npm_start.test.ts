// `npm start` must not orphan the server: SIGTERM to npm's own PID (what a supervisor or a
// container runtime sends to the process it started) reaches the server, which drains and
// exits, and npm exits with it.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { repoRoot, runtime } from "../support/runtime.ts";
import { waitUntil, within } from "../support/reliability.ts";

/** Whether a process with this PID exists (a signal 0 checks without sending anything). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe(`examples: npm start (${runtime})`, () => {
  test(`npm start: SIGTERM to npm's PID drains the server, ends its process and frees its port (${runtime})`, { timeout: 60_000 }, async () => {
    const npm = spawn("npm", ["start"], {
      cwd: repoRoot,
      env: {
        ...process.env,
        NO_COLOR: "1",
        PORT: "0",
        HOST: "127.0.0.1",
        HYGIENE_DRAIN_TIMEOUT_MS: "5000",
        HYGIENE_REQUEST_TIMEOUT_MS: "4000",
        HYGIENE_LOAD_MONITOR: "off",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    npm.stdout!.setEncoding("utf8").on("data", (chunk: string) => (out += chunk));
    npm.stderr!.setEncoding("utf8").on("data", (chunk: string) => (out += chunk));
    const npmExited = new Promise<number | string>((resolve) => npm.on("exit", (code, signal) => resolve(code ?? signal ?? -1)));
    const line = (re: RegExp) => out.split("\n").find((l) => re.test(l));
    let serverPid: number | undefined;
    try {
      await waitUntil(() => line(/"listening"/) !== undefined, () => `no listening line from npm start:\n${out}`);
      const listening = JSON.parse(line(/"listening"/)!);
      serverPid = listening.pid as number;
      assert.ok(Number.isInteger(serverPid) && serverPid !== npm.pid, `the server's own pid is printed: ${serverPid}`);
      const url = listening.url as string;
      assert.equal((await (await fetch(`${url}/healthz`)).text()), "ok\n");

      process.kill(npm.pid!, "SIGTERM");
      await within(npmExited, `npm exiting after SIGTERM:\n${out}`);
      await waitUntil(() => !alive(serverPid!), () => `the server (pid ${serverPid}) outlived npm:\n${out}`);
      const drained = JSON.parse(line(/"drained"/) ?? "null");
      assert.equal(drained?.outcome, "clean", "the server drained on the signal rather than being cut");
      await assert.rejects(fetch(`${url}/healthz`), "the port no longer answers");
    } finally {
      // End only what this test started: npm, and the server it launched (by their PIDs).
      if (serverPid !== undefined && alive(serverPid)) process.kill(serverPid, "SIGKILL");
      if (npm.exitCode === null && npm.signalCode === null) npm.kill("SIGKILL");
    }
  });

  test("npm start: the script execs the server (npm signals it directly), with the command the systemd unit runs", () => {
    const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8"));
    const start: string = pkg.scripts.start;
    assert.match(start, /^exec node /, "without exec, /bin/sh sits between npm and node and does not pass SIGTERM on");
    const unit = readFileSync(new URL("../../examples/deploy/serve-hygiene.service", import.meta.url), "utf8");
    const execStart = unit.match(/^ExecStart=\/usr\/bin\/(.+)$/m)?.[1];
    assert.equal(execStart, start.replace(/^exec /, ""), "production runs the same command, with no npm in between");
  });
});
