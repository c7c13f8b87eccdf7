// A real `redis-server` for the tests: started on a free loopback port with persistence off
// and no config file, ready once it answers PING, stopped by PID — always, also when a test
// fails (an exit hook ends every server this process started). It can be killed mid-test and
// restarted on the same port. A missing redis-server FAILS the test with how to install it:
// the shared-store tests are never skipped silently (`.ci/run` installs it on CI).
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openResp, respOnce, type RespValue } from "./resp.ts";

/** The server binary: `HYGIENE_TEST_REDIS_SERVER` (e.g. valkey-server) or redis-server on PATH. */
const BINARY = process.env.HYGIENE_TEST_REDIS_SERVER ?? "redis-server";
const READY_MS = 10_000;

/** The failure a missing server binary gives (never a skip). */
export const missingMessage = (binary: string) =>
  `${binary} was not found on PATH. The shared-store tests need a real Redis: ` +
  "install the Debian package (`sudo apt-get install -y redis-server`), or run `.ci/run`, which installs it; " +
  "HYGIENE_TEST_REDIS_SERVER may name another binary (valkey-server).";

export interface RedisServer {
  readonly port: number;
  /** `redis://127.0.0.1:PORT` */
  readonly url: string;
  /** The PID of the running server (changes on restart). */
  readonly pid: number;
  /** True while the server process is running. */
  running(): boolean;
  /** One command on a fresh side connection (not the client under test). */
  command(...args: (string | number)[]): Promise<RespValue>;
  /** INFO commandstats as { command: calls }, e.g. { evalsha: 12, ping: 3 }. */
  commandCalls(): Promise<Record<string, number>>;
  /** SIGKILL by PID (a crash); resolves once the process has ended. */
  kill(): Promise<void>;
  /** Starts it again on the same port (empty: no persistence); resolves once it answers PING. */
  restart(): Promise<void>;
  /** Ends it by PID (SIGTERM, SIGKILL after 3 s) and removes its directory. Idempotent. */
  stop(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

export interface StartRedisOptions {
  /** Allow DEBUG (Redis ≥ 7 refuses it by default). @default true */
  debug?: boolean;
  /** The server binary. @default HYGIENE_TEST_REDIS_SERVER or "redis-server" */
  binary?: string;
  /** A port to use instead of a free one (no retry on another port if it is taken). */
  port?: number;
  /** More arguments for redis-server (e.g. `--cluster-enabled yes`). */
  args?: readonly string[];
}

const live = new Set<ChildProcess>();
let hooked = false;
/** Ends every server still running when the test process exits, whatever ended it. */
function hookExit(): void {
  if (hooked) return;
  hooked = true;
  process.on("exit", () => {
    for (const child of live) {
      try {
        process.kill(child.pid!, "SIGKILL");
      } catch {
        // already gone
      }
    }
  });
}

const majors = new Map<string, number>();
/** The server's major version (DEBUG needs a flag from 7 on); throws the install hint when it is missing. */
function serverMajor(binary: string): number {
  const known = majors.get(binary);
  if (known !== undefined) return known;
  const r = spawnSync(binary, ["--version"], { encoding: "utf8" });
  if (r.error !== undefined || r.status !== 0) throw new Error(missingMessage(binary));
  const m = r.stdout.match(/v=(\d+)\./);
  const major = m ? Number(m[1]) : 7;
  majors.set(binary, major);
  return major;
}

/** A port the OS just handed out on 127.0.0.1 (closed again; redis-server takes it next). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

const delay = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

interface Launched {
  child: ChildProcess;
  exited: Promise<void>;
  output: () => string;
}

function launch(binary: string, port: number, dir: string, debug: boolean, extra: readonly string[]): Launched {
  const args = ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir, "--daemonize", "no", "--logfile", "", ...extra];
  if (debug && serverMajor(binary) >= 7) args.push("--enable-debug-command", "yes");
  const child = spawn(binary, args, { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout!.setEncoding("utf8").on("data", (s: string) => (out += s));
  child.stderr!.setEncoding("utf8").on("data", (s: string) => (out += s));
  live.add(child);
  const exited = new Promise<void>((resolve) => {
    child.once("exit", () => (live.delete(child), resolve()));
    child.once("error", () => (live.delete(child), resolve()));
  });
  return { child, exited, output: () => out };
}

/**
 * Resolves once the server we launched answers on `port` — PONG, and INFO's process_id is its
 * PID (a server of another test file that got the same free port must not pass for ours);
 * rejects with the server's output if it ended or never did.
 */
async function ready(port: number, launched: Launched): Promise<void> {
  let gone = false;
  void launched.exited.then(() => (gone = true));
  const end = Date.now() + READY_MS;
  for (;;) {
    if (gone) throw new Error(`redis-server on port ${port} exited while starting:\n${launched.output()}`);
    try {
      if ((await respOnce(port, "PING")) === "PONG") {
        const info = String(await respOnce(port, "INFO", "server"));
        if (info.includes(`process_id:${launched.child.pid}\r\n`)) return;
      }
    } catch {
      // not listening yet
    }
    if (Date.now() > end) throw new Error(`redis-server on port ${port} did not answer PING within ${READY_MS} ms:\n${launched.output()}`);
    await delay(20);
  }
}

/** Starts a fresh redis-server on a free port; resolves once it answers PING. */
export async function startRedis(options: StartRedisOptions = {}): Promise<RedisServer> {
  const binary = options.binary ?? BINARY;
  serverMajor(binary);
  hookExit();
  const debug = options.debug ?? true;
  const extra = options.args ?? [];
  const dir = mkdtempSync(join(tmpdir(), "hygiene-redis-"));
  let port = 0;
  let current: Launched | undefined;
  // The free port can be taken between our probe and the server's bind: try a few.
  for (let attempt = 0; ; attempt++) {
    port = options.port ?? (await freePort());
    current = launch(binary, port, dir, debug, extra);
    try {
      await ready(port, current);
      break;
    } catch (error) {
      current.child.kill("SIGKILL");
      await current.exited;
      if (attempt >= 2 || options.port !== undefined) {
        rmSync(dir, { recursive: true, force: true });
        throw error;
      }
    }
  }
  let stopped = false;
  const ended = () => current!.child.exitCode !== null || current!.child.signalCode !== null;
  const end = async (signal: NodeJS.Signals) => {
    if (ended()) return;
    process.kill(current!.child.pid!, signal);
    const timer = setTimeout(() => !ended() && process.kill(current!.child.pid!, "SIGKILL"), 3_000);
    await current!.exited;
    clearTimeout(timer);
  };
  const server: RedisServer = {
    port,
    url: `redis://127.0.0.1:${port}`,
    get pid() {
      return current!.child.pid!;
    },
    running: () => !ended(),
    command: (...args) => respOnce(port, ...args),
    async commandCalls() {
      const info = String(await respOnce(port, "INFO", "commandstats"));
      const calls: Record<string, number> = {};
      for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) calls[m[1]!] = Number(m[2]);
      return calls;
    },
    kill: () => end("SIGKILL"),
    async restart() {
      if (stopped) throw new Error("restart after stop");
      await end("SIGKILL");
      current = launch(binary, port, dir, debug, extra);
      await ready(port, current);
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      await end("SIGTERM");
      rmSync(dir, { recursive: true, force: true });
    },
    [Symbol.asyncDispose]: () => server.stop(),
  };
  return server;
}

/** A port free on 127.0.0.1 whose cluster bus port (+10000) is free too. */
async function clusterPort(): Promise<number> {
  for (let i = 0; i < 50; i++) {
    const port = await freePort();
    if (port > 55_535) continue;
    const bus = await new Promise<boolean>((resolve) => {
      const server = createServer();
      server.once("error", () => resolve(false));
      server.listen(port + 10_000, "127.0.0.1", () => server.close(() => resolve(true)));
    });
    if (bus) return port;
  }
  throw new Error("no free port pair for a cluster node");
}

/**
 * A Redis Cluster of `masters` masters, no replicas, the slots split evenly; resolves once
 * every node says `cluster_state:ok`. Each node is a {@linkcode RedisServer} (stopped by PID).
 */
export async function startRedisCluster(masters = 3): Promise<RedisServer[]> {
  const nodes: RedisServer[] = [];
  try {
    for (let i = 0; i < masters; i++) {
      const args = ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "2000"];
      for (let attempt = 0; ; attempt++) {
        try {
          nodes.push(await startRedis({ port: await clusterPort(), args }));
          break;
        } catch (error) {
          if (attempt >= 2) throw error;
        }
      }
    }
    const SLOTS = 16_384;
    for (const [i, node] of nodes.entries()) {
      const from = Math.floor((SLOTS * i) / masters);
      const to = Math.floor((SLOTS * (i + 1)) / masters) - 1;
      await node.command("CLUSTER", "ADDSLOTSRANGE", from, to);
    }
    for (const node of nodes.slice(1)) await nodes[0]!.command("CLUSTER", "MEET", "127.0.0.1", node.port);
    const end = Date.now() + READY_MS;
    for (;;) {
      const states = await Promise.all(nodes.map((n) => n.command("CLUSTER", "INFO")));
      if (states.every((s) => String(s).includes("cluster_state:ok") && String(s).includes(`cluster_known_nodes:${masters}`))) return nodes;
      if (Date.now() > end) throw new Error(`the cluster did not form within ${READY_MS} ms: ${String(states[0])}`);
      await delay(50);
    }
  } catch (error) {
    await Promise.all(nodes.map((n) => n.stop()));
    throw error;
  }
}

export { openResp };
