// A real redis-server for the Redis part: started by this runner on a free loopback port
// (persistence off, no config file), pinned to the load generator's core, ready once it
// answers PING, ended by its PID. The tests have their own (test/support/redis.ts); this is
// the same few steps in plain JavaScript, for a runner that runs without a TypeScript loader.
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { connect, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LOAD_CORE, sleep } from "./_lib.mjs";

const BINARY = process.env.HYGIENE_TEST_REDIS_SERVER ?? "redis-server";

const freePort = () =>
  new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });

/** One command on a fresh connection; resolves with the raw reply text. */
export function rawCommand(port, ...args) {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: "127.0.0.1", port });
    let out = "";
    const timer = setTimeout(() => (socket.destroy(), reject(new Error(`${args[0]}: no reply within 5 s`))), 5_000);
    socket.once("error", (e) => (clearTimeout(timer), reject(e)));
    socket.setEncoding("utf8").on("data", (s) => {
      out += s;
      // A simple or error reply ends at its first CRLF; a bulk string once its length is in.
      const m = /^\$(\d+)\r\n/.exec(out);
      if ((m && out.length >= m[0].length + Number(m[1]) + 2) || (!m && /^[+\-:].*\r\n/.test(out))) {
        clearTimeout(timer);
        socket.destroy();
        resolve(m ? out.slice(m[0].length, m[0].length + Number(m[1])) : out.trim());
      }
    });
    socket.write(args.map((a) => String(a)).reduce((acc, a) => acc + `$${Buffer.byteLength(a)}\r\n${a}\r\n`, `*${args.length}\r\n`));
  });
}

/** Commands Redis has run, by name (INFO commandstats), the INFO calls themselves left out. */
export async function commandCalls(port) {
  const info = await rawCommand(port, "INFO", "commandstats");
  const calls = {};
  for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) if (m[1] !== "info") calls[m[1]] = Number(m[2]);
  return calls;
}

/** Starts redis-server; resolves with { port, url, pid, stop() } once it answers PING. */
export async function startRedisServer() {
  const version = spawnSync(BINARY, ["--version"], { encoding: "utf8" });
  if (version.error || version.status !== 0) throw new Error(`${BINARY} not found: the Redis part needs a real Redis (apt-get install redis-server)`);
  const dir = mkdtempSync(join(tmpdir(), "hygiene-bench-redis-"));
  const port = await freePort();
  const child = spawn("taskset", ["-c", LOAD_CORE, BINARY, "--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir, "--logfile", ""], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let log = "";
  child.stdout.on("data", (c) => (log += c));
  child.stderr.on("data", (c) => (log += c));
  const exited = new Promise((resolve) => child.once("exit", resolve));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) process.kill(child.pid, "SIGKILL");
    await Promise.race([exited, sleep(5_000)]);
    rmSync(dir, { recursive: true, force: true });
  };
  process.once("exit", () => child.exitCode === null && child.signalCode === null && process.kill(child.pid, "SIGKILL"));
  const end = Date.now() + 10_000;
  for (;;) {
    try {
      if ((await rawCommand(port, "PING")) === "+PONG") break;
    } catch { /* not yet */ }
    if (Date.now() > end || child.exitCode !== null) {
      await stop();
      throw new Error(`redis-server on ${port} did not answer PING:\n${log}`);
    }
    await sleep(20);
  }
  return { port, url: `redis://127.0.0.1:${port}`, pid: child.pid, version: version.stdout.match(/v=(\S+)/)?.[1] ?? "?", stop };
}
