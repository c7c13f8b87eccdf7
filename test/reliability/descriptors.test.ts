// Reliability: a server out of file descriptors (test/fixtures/descriptors_server.ts under
// `ulimit -n 256`), flooded with more idle connections than that while one request is in
// flight. Deno's listener ends at the first accept it cannot make (its `finished` rejects):
// the request it admitted must still be answered before serve() reports the failure and the
// process exits 1 — it was cut unanswered (a descriptor-exhaustion review). Node closes what
// it cannot accept and serves on. Bun spins a core and answers nothing until the connections
// close (a bare Bun.serve too: the README's capability table), so it is not run there.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { connect, type Socket } from "node:net";
import { repoRoot, runtime, tsCommand } from "../support/runtime.ts";
import { delay, within } from "../support/reliability.ts";

/** One GET on its own connection: the status line, or how the connection ended without one. */
function get(port: number, path: string): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    let data = "";
    socket.on("connect", () => socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`));
    socket.on("data", (chunk) => (data += String(chunk)));
    socket.on("error", (error: NodeJS.ErrnoException) => resolve(`error ${error.code}`));
    socket.on("close", () => resolve(data === "" ? "closed" : data.split("\r\n")[0]!));
  });
}

describe(`reliability (${runtime}): out of file descriptors`, { skip: runtime === "bun" ? "Bun spins a core and answers nothing while out of descriptors (capability table)" : false }, () => {
  test(`reliability (${runtime}): a flood past the descriptor limit while a request is in flight: the request is answered${runtime === "deno" ? "; Deno's listener ends, serve() fails io and the process exits 1" : "; the server serves on"}`, { timeout: 60_000 }, async () => {
    const [cmd, args] = tsCommand("test/fixtures/descriptors_server.ts");
    // 256 descriptors, or fewer where the hard limit is lower already (it cannot be raised).
    const limit = 'h=$(ulimit -Hn); n=256; if [ "$h" != unlimited ] && [ "$h" -lt 256 ]; then n=$h; fi; ulimit -n "$n" && exec "$0" "$@"';
    const child = spawn("bash", ["-c", limit, cmd, ...args], { cwd: repoRoot, env: { ...process.env, NO_COLOR: "1", WORK_MS: "3000" }, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout!.setEncoding("utf8").on("data", (chunk: string) => (out += chunk));
    child.stderr!.setEncoding("utf8").on("data", (chunk: string) => (err += chunk));
    const exited = new Promise<number | string>((resolve) => child.on("exit", (code, signal) => resolve(code ?? signal ?? -1)));
    let ended = false;
    void exited.then(() => (ended = true));
    const records = () => out.split("\n").slice(0, -1).filter((l) => l.startsWith("{")).map((l) => JSON.parse(l) as Record<string, unknown>);
    const flood: Socket[] = [];
    try {
      const until = async (what: string, ok: () => boolean) => {
        await within((async () => {
          while (!ok()) {
            if (ended) throw new Error(`the server ended before ${what}; stdout:\n${out}\nstderr:\n${err}`);
            await delay(10);
          }
        })(), what);
      };
      await until("it listens", () => records().some((r) => r.listening === true));
      const port = records().find((r) => r.listening === true)!.port as number;
      const slow = get(port, "/slow");
      await until("the request started", () => records().some((r) => r.started === true));
      for (let i = 0; i < 400; i++) {
        const socket = connect(port, "127.0.0.1");
        socket.on("error", () => {});
        flood.push(socket);
      }
      assert.equal(await within(slow, "the admitted request's answer"), "HTTP/1.1 200 OK");
      if (runtime === "deno") {
        assert.equal(await within(exited, "the exit"), 1, err);
        assert.ok(records().some((r) => r.failed === "io"), out);
        assert.ok(records().some((r) => r.log === "serve failed" && r.kind === "io"), out);
      } else {
        for (const socket of flood) socket.destroy();
        let answer = "";
        await within((async () => {
          while ((answer = await get(port, "/")) !== "HTTP/1.1 200 OK") await delay(50);
        })(), `an answer after the flood (last: ${answer})`);
        child.kill("SIGTERM");
        assert.equal(await within(exited, "the exit"), 0, err);
        assert.ok(records().some((r) => r.finished === "clean"), out);
      }
    } finally {
      for (const socket of flood) socket.destroy();
      if (!ended) child.kill("SIGKILL");
    }
  });
});
