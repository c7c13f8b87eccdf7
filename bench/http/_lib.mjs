// The HTTP runner's plumbing: pinned child servers, the load generator (wrk, else
// autocannon), CPU time from /proc, medians. Every child is one this runner started; it is
// ended by its PID, and every wait is bounded.
import { spawn, spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, unlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createInterface } from "node:readline";

export const root = fileURLToPath(new URL("../..", import.meta.url));
export const here = fileURLToPath(new URL(".", import.meta.url));
export const bin = (name) => join(root, "node_modules", ".bin", name);
/**
 * Where scripts/bench.mjs has tsc put the JavaScript Node runs (no tsx: see scripts/bench.mjs).
 * BENCH_BUILD_DIR moves it (inside the checkout, so packages still resolve): where several
 * checkouts share one node_modules, a shared cache would let one run measure another's build.
 */
export const built = process.env.BENCH_BUILD_DIR ? join(root, process.env.BENCH_BUILD_DIR) : join(root, "node_modules", ".cache", "serve-hygiene-bench");
export const SERVER_CORE = "1";
export const LOAD_CORE = "0";
export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Servers and load generators running now (all started here): ended by PID if the runner is stopped. */
const live = new Set();
function track(child) {
  live.add(child);
  child.once("exit", () => live.delete(child));
  return child;
}
/** Ends every child still running (by its PID); run.mjs calls it when it is interrupted. */
export function endChildren() {
  for (const child of live) {
    try {
      process.kill(child.pid, "SIGKILL");
    } catch { /* already gone */ }
  }
}

export function median(values) {
  const s = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

/** The tree the servers and the library come from: this checkout (or a baseline, see {@link baselineTree}). */
export const currentTree = { name: "current", root, built };

/** How each runtime starts a server file of `tree`. */
export const runtimes = {
  node: (file, args, tree = currentTree) => [process.execPath, [...(process.env.BENCH_NODE_FLAGS?.split(" ").filter(Boolean) ?? []), join(tree.built, "bench", "http", "servers", `${file}.js`), ...args]],
  deno: (file, args) => [bin("deno"), ["run", "-A", join("bench", "http", "servers", `${file}.ts`), ...args]],
  bun: (file, args) => [bin("bun"), ["run", join("bench", "http", "servers", `${file}.ts`), ...args]],
};

/**
 * Compiles src/ and bench/ of `tree` for Node with tsc (scripts/bench.mjs does the same). A
 * type error elsewhere (an in-process bench left behind by a refactor) does not stop the HTTP
 * suite: tsc still emits, so it goes on when the servers were freshly emitted, and says so.
 */
export function compileForNode(tree = currentTree, config = "tsconfig.bench.json") {
  const t0 = Date.now();
  const r = spawnSync(bin("tsc"), ["-p", config, "--outDir", tree.built], { cwd: tree.root, encoding: "utf8", timeout: 5 * 60_000 });
  const server = join(tree.built, "bench", "http", "servers", "node.js");
  const fresh = existsSync(server) && statSync(server).mtimeMs >= t0 - 1000;
  if (!fresh) throw new Error(`tsc -p ${config} emitted no servers in ${tree.root}:\n${r.stdout}${r.stderr}`);
  if (r.status !== 0) console.log(`tsc -p ${config} in ${tree.root} reported type errors; the servers were emitted all the same, so the run goes on:\n${r.stdout.split("\n").slice(0, 8).join("\n")}`);
}

/**
 * Starts a server pinned to SERVER_CORE and resolves once it prints `{"listening":port}`.
 * `taskset` execs the runtime, so the child's PID is the server's own (for /proc).
 */
export function startServer(runtime, file, args = [], { env = {}, tree = currentTree } = {}) {
  const [exe, argv] = runtimes[runtime](file, args, tree);
  const child = track(spawn("taskset", ["-c", SERVER_CORE, exe, ...argv], {
    cwd: tree.root,
    env: { ...process.env, NO_COLOR: "1", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  }));
  const exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal, at: performance.now() })));
  let log = "";
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      stopServer({ child, exited });
      reject(new Error(`${runtime} ${file} ${args.join(" ")}: not listening after 30 s\n${log}`));
    }, 30_000);
    const onData = (chunk) => {
      log += chunk;
      const m = /\{"listening":(\d+)\}/.exec(log);
      if (m) {
        clearTimeout(timer);
        child.stdout.off("data", onData);
        child.stdout.resume();
        resolve({ child, pid: child.pid, port: Number(m[1]), exited, log: () => log });
      }
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", (chunk) => (log += chunk));
    exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`${runtime} ${file} ${args.join(" ")} exited (${code ?? signal}) before listening\n${log}`));
    });
  });
}

/** Ends a server this runner started, by its PID, and waits (bounded) for it to go. */
export async function stopServer(server) {
  if (server.child.exitCode === null && server.child.signalCode === null) {
    try {
      process.kill(server.child.pid, "SIGKILL");
    } catch { /* already gone */ }
  }
  await Promise.race([server.exited, sleep(5_000)]);
}

/**
 * `--baseline <ref>`: the library as it was at `ref`, exported with `git archive` into a
 * temporary directory (no worktree is registered in the repository), with node_modules a
 * symlink to this checkout's. The servers are this checkout's (bench/http/servers copied over
 * the baseline's), so both trees serve the same subjects and only the library differs; the
 * servers may therefore use only API both trees have. Node's build goes to
 * `<tmp>/.bench-build` (node_modules/.cache is shared through the symlink). Call `remove()`
 * when done (run.mjs does, on exit and on Ctrl-C).
 */
export function baselineTree(ref) {
  const git = (...a) => spawnSync("git", a, { cwd: root, encoding: "utf8", timeout: 60_000 });
  const rev = git("rev-parse", "--verify", "--quiet", `${ref}^{commit}`);
  if (rev.status !== 0) throw new Error(`--baseline ${ref}: not a commit in this repository`);
  const commit = rev.stdout.trim();
  const dir = mkdtempSync(join(tmpdir(), "serve-hygiene-baseline-"));
  const tree = {
    name: "before",
    ref,
    commit,
    root: dir,
    built: join(dir, ".bench-build"),
    remove() {
      if (!existsSync(dir)) return;
      try {
        unlinkSync(join(dir, "node_modules")); // the link, never what it points to
      } catch { /* not made yet */ }
      rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    const tar = spawnSync("sh", ["-c", `git archive --format=tar ${commit} | tar -x -C "${dir}"`], { cwd: root, stdio: "inherit", timeout: 5 * 60_000 });
    if (tar.status !== 0) throw new Error(`git archive ${commit} failed`);
    symlinkSync(join(root, "node_modules"), join(dir, "node_modules"), "dir");
    const servers = join("bench", "http", "servers");
    rmSync(join(dir, servers), { recursive: true, force: true });
    cpSync(join(root, servers), join(dir, servers), { recursive: true });
    compileForNode(tree, existsSync(join(dir, "tsconfig.bench.json")) ? "tsconfig.bench.json" : join(root, "tsconfig.bench.json"));
    console.log(`baseline: ${ref} = ${commit.slice(0, 10)}, exported to ${dir}; its serve-hygiene subjects run next to this checkout's in every round`);
    return tree;
  } catch (error) {
    tree.remove();
    throw error;
  }
}

/** A short description of the checkout being measured: its commit, and whether it has uncommitted changes. */
export function describeCurrent() {
  const git = (...a) => spawnSync("git", a, { cwd: root, encoding: "utf8" }).stdout.trim();
  return `${git("rev-parse", "--short=10", "HEAD")}${git("status", "--porcelain", "--untracked-files=no") ? " + uncommitted changes" : ""}`;
}

const TICK = Number(spawnSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).stdout.trim()) || 100;

/** utime + stime of a process (all its threads), in seconds, from /proc/<pid>/stat. */
export function cpuSeconds(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / TICK; // fields 14 and 15 of proc(5)
}

/** CPU seconds of the process's main thread alone (its other threads: the engine's compiler and GC helpers, libuv's pool, …). */
export function mainThreadCpuSeconds(pid) {
  return cpuSeconds(`${pid}/task/${pid}`);
}

/**
 * Moves every thread of `pid` but its main one to the load generator's core (a diagnostic:
 * what the server's own thread costs when the engine's background compiler and GC helpers do not
 * share its core). Threads started later are not moved.
 */
export function moveThreadsApart(pid) {
  let moved = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    if (tid === String(pid)) continue;
    if (spawnSync("taskset", ["-p", "-c", LOAD_CORE, tid], { encoding: "utf8" }).status === 0) moved++;
  }
  return moved;
}

// ---- the load generator ----

function which(name) {
  return spawnSync("sh", ["-c", `command -v ${name}`], { encoding: "utf8" }).stdout.trim() || undefined;
}

/**
 * wrk when present; when absent and we are root with apt-get, installs Debian's package;
 * else autocannon (from devDependencies). BENCH_LOADGEN=autocannon forces the fallback.
 * Says which it uses.
 */
export function detectLoadGenerator() {
  if (process.env.BENCH_LOADGEN === "autocannon") return useAutocannon("BENCH_LOADGEN=autocannon");
  let wrk = which("wrk");
  if (wrk === undefined && process.getuid?.() === 0 && which("apt-get")) {
    console.log("load generator: wrk not found; installing Debian's wrk package (apt-get install -y wrk)");
    spawnSync("apt-get", ["update", "-qq"], { stdio: "inherit", timeout: 5 * 60_000 });
    spawnSync("apt-get", ["install", "-y", "-qq", "wrk"], { stdio: "inherit", timeout: 5 * 60_000, env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" } });
    wrk = which("wrk");
  }
  if (wrk === undefined) return useAutocannon("wrk not found and not installable here");
  const version = spawnSync(wrk, ["-v"], { encoding: "utf8" }).stdout.split("\n")[0].trim();
  console.log(`load generator: ${version} (${wrk}), one thread, pinned to core ${LOAD_CORE}; servers pinned to core ${SERVER_CORE}`);
  return { kind: "wrk", path: wrk, version };
}

function useAutocannon(why) {
  if (!existsSync(join(root, "node_modules", "autocannon"))) throw new Error(`${why}, and autocannon is not installed: run npm install`);
  const version = JSON.parse(readFileSync(join(root, "node_modules", "autocannon", "package.json"), "utf8")).version;
  console.log(`load generator: autocannon ${version} (${why}), pinned to core ${LOAD_CORE}; servers pinned to core ${SERVER_CORE}`);
  return { kind: "autocannon", version: `autocannon ${version}` };
}

/**
 * One load run against 127.0.0.1 (only), bounded in time: wrk -t1 (or autocannon) pinned to
 * LOAD_CORE. `latency2xx` times 2xx responses one by one (latency.lua); otherwise wrk's
 * own summary (summary.lua). Resolves with the parsed one-line JSON summary.
 */
/**
 * The hold `load()` applies for `startMs`: whole seconds (wrk's -d takes no fractions), and none
 * under autocannon (no such hook). A caller that waits out the hold waits this long.
 */
export const heldMs = (gen, startMs = 0) => (gen.kind === "wrk" && startMs > 0 ? Math.ceil(startMs / 1000) * 1000 : 0);

export function load(gen, { port, path = "/", connections, seconds, timeoutS = 10, latency2xx = false, rate, startMs = 0 }) {
  const url = `http://127.0.0.1:${port}${path}`;
  // `rate` (requests/s over all connections) paces the load instead of a closed loop;
  // `startMs` holds every connection's first request that long, so the server accepts all the
  // connections before the load starts; the run lasts that much longer, and the figures cover
  // the `seconds` after it (latency.lua only; autocannon has no such hold).
  const start = heldMs(gen, startMs);
  const scripted = rate !== undefined || start > 0 ? ["--", rate === undefined ? "-" : String(Math.max(1, Math.round(rate))), String(start)] : [];
  const [exe, argv] = gen.kind === "wrk"
    ? [gen.path, ["-t1", `-c${connections}`, `-d${(seconds * 1000 + start) / 1000}s`, `--timeout`, `${timeoutS}s`, "-s", join(here, latency2xx || scripted.length > 0 ? "latency.lua" : "summary.lua"), url, ...scripted]]
    : [process.execPath, [join(here, "_autocannon.mjs"), JSON.stringify({ url, connections, seconds, timeoutS, latency2xx, rate })]];
  return new Promise((resolve, reject) => {
    const child = track(spawn("taskset", ["-c", LOAD_CORE, exe, ...argv], { cwd: root, stdio: ["ignore", "pipe", "pipe"] }));
    let out = "";
    child.stdout.on("data", (c) => (out += c));
    child.stderr.on("data", (c) => (out += c));
    const timer = setTimeout(() => process.kill(child.pid, "SIGKILL"), (seconds + start / 1000 + timeoutS + 20) * 1000);
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      const line = out.split("\n").find((l) => l.startsWith("WRK "));
      if (!line) return reject(new Error(`load generator failed (${code ?? signal}):\n${out.slice(-2000)}`));
      const r = JSON.parse(line.slice(4));
      r.seconds = (r.durationUs - start * 1000) / 1e6;
      resolve(r);
    });
  });
}

/**
 * Connections the kernel has established on 127.0.0.1:`port` that the server has not accepted
 * yet: the listening socket's accept queue (rx_queue of its LISTEN line in /proc/net/tcp).
 * Undefined where /proc/net/tcp cannot be read or has no such line.
 */
export function acceptBacklog(port) {
  let text;
  try {
    text = readFileSync("/proc/net/tcp", "utf8");
  } catch {
    return undefined;
  }
  const local = `0100007F:${port.toString(16).toUpperCase().padStart(4, "0")}`;
  for (const line of text.split("\n")) {
    const f = line.trim().split(/\s+/);
    if (f[1] === local && f[3] === "0A") return parseInt(f[4].split(":")[1], 16);
  }
  return undefined;
}

/**
 * Samples acceptBacklog(port) every `everyMs` until stopped; `stop()` returns the mean and
 * the largest sample (undefined when nothing could be read).
 */
export function sampleBacklog(port, everyMs = 250) {
  const samples = [];
  const timer = setInterval(() => {
    const n = acceptBacklog(port);
    if (n !== undefined) samples.push(n);
  }, everyMs);
  return {
    stop() {
      clearInterval(timer);
      if (samples.length === 0) return undefined;
      return { mean: samples.reduce((a, b) => a + b, 0) / samples.length, max: Math.max(...samples) };
    },
  };
}

/** Percentile (0..100) of a [[valueUs, count], …] histogram. */
export function histPercentile(hist, p) {
  const sorted = [...hist].sort((a, b) => a[0] - b[0]);
  const total = sorted.reduce((n, [, c]) => n + c, 0);
  if (total === 0) return NaN;
  const rank = Math.ceil((p / 100) * total);
  let seen = 0;
  for (const [v, c] of sorted) {
    seen += c;
    if (seen >= rank) return v;
  }
  return sorted.at(-1)[0];
}

export const histMax = (hist) => (hist.length ? Math.max(...hist.map(([v]) => v)) : NaN);

/** What the figures were measured on. */
export function environment(gen) {
  const cpu = readFileSync("/proc/cpuinfo", "utf8").match(/model name\s*:\s*(.*)/)?.[1] ?? "unknown";
  const mem = Math.round(Number(readFileSync("/proc/meminfo", "utf8").match(/MemTotal:\s*(\d+)/)?.[1] ?? 0) / 1048576);
  const v = (cmd, args) => spawnSync(cmd, args, { encoding: "utf8" }).stdout.trim().split("\n")[0];
  const pkg = (name) => {
    try {
      return JSON.parse(readFileSync(join(root, "node_modules", name, "package.json"), "utf8")).version;
    } catch {
      return "absent";
    }
  };
  return {
    machine: `${cpu}, ${spawnSync("nproc", ["--all"], { encoding: "utf8" }).stdout.trim()} cores, ${mem} GiB, ${v("uname", ["-sr"])}`,
    node: process.version.slice(1),
    deno: v(bin("deno"), ["-V"]).replace(/^deno /, ""),
    bun: v(bin("bun"), ["-v"]),
    loadGenerator: gen?.version,
    packages: Object.fromEntries(
      ["hono", "@hono/node-server", "hono-rate-limiter", "fastify", "@fastify/rate-limit", "@fastify/under-pressure", "rate-limiter-flexible", "esbuild"].map((n) => [n, pkg(n)]),
    ),
  };
}

/**
 * Other processes that used more than 10% of a core over the last `ms` (not this runner
 * or its children): a benchmark run next to them measures them too, so the runner warns.
 */
export async function busyOthers(ms = 1000) {

  const sample = () => {
    const out = new Map();
    for (const pid of readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
        const comm = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
        const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
        out.set(pid, { comm, ppid: f[1], ticks: Number(f[11]) + Number(f[12]) });
      } catch { /* gone */ }
    }
    return out;
  };
  const a = sample();
  await sleep(ms);
  const b = sample();
  const mine = new Set([String(process.pid)]);
  for (const [pid, p] of b) if (mine.has(p.ppid)) mine.add(pid);
  const busy = [];
  for (const [pid, p] of b) {
    const before = a.get(pid);
    if (!before || mine.has(pid)) continue;
    const share = (p.ticks - before.ticks) / TICK / (ms / 1000);
    if (share > 0.1) busy.push(`${p.comm} (pid ${pid}, ${Math.round(share * 100)}%)`);
  }
  return busy;
}

/** CPU ticks of every process that is not this runner or one of its descendants. */
export function othersTicks() {
  const procs = [];
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      procs.push({ pid, ppid: f[1], ticks: Number(f[11]) + Number(f[12]) });
    } catch { /* gone */ }
  }
  const mine = new Set([String(process.pid)]);
  for (let grew = true; grew;) {
    grew = false;
    for (const p of procs) if (!mine.has(p.pid) && mine.has(p.ppid)) (mine.add(p.pid), (grew = true));
  }
  return new Map(procs.filter((p) => !mine.has(p.pid)).map((p) => [p.pid, p.ticks]));
}

/** Cores' worth of CPU that other processes used between two {@link othersTicks} snapshots. */
export function othersShare(before, after, seconds) {
  let ticks = 0;
  for (const [pid, t] of after) ticks += t - (before.get(pid) ?? t);
  return ticks / TICK / seconds;
}

/** Waits (bounded) until other processes use under `threshold` of a core over a second. */
export async function waitQuiet(maxMs = 60_000, threshold = 0.1) {
  const until = Date.now() + maxMs;
  for (;;) {
    const a = othersTicks();
    await sleep(1000);
    if (othersShare(a, othersTicks(), 1) < threshold || Date.now() > until) return;
  }
}

/** `--quick` checks the harness, not the figures: it neither waits for quiet nor repeats a disturbed run. */
export const quiet = { wait: true };

/**
 * Runs one measurement once other processes are quiet (waiting a minute at most); when they
 * used more than 10% of a core meanwhile all the same, repeats it (twice at most), and says so. Resolves with the
 * result and the share of a core the others used (`noise`).
 */
export async function undisturbed(seconds, measure, label = "") {
  for (let attempt = 1; ; attempt++) {
    if (quiet.wait) await waitQuiet(60_000);
    const a = othersTicks();
    const result = await measure();
    const noise = othersShare(a, othersTicks(), seconds);
    if (noise < 0.1 || attempt >= 3 || !quiet.wait) return { result, noise };
    console.log(`  (${label}: other processes used ${Math.round(noise * 100)}% of a core during the run; waiting for quiet and repeating)`);
    await waitQuiet(30_000);
  }
}

// ---- the machine's speed ----

let speedChild;
/**
 * The machine's speed now, on the servers' core: the best of three runs of a fixed memory-bound
 * loop (bench/http/_speed.mjs), in ms; lower is faster. One child, pinned to SERVER_CORE and
 * started on first use, times it on request; `endMachineSpeed()` ends it.
 */
export async function machineSpeedMs() {
  if (speedChild === undefined) {
    const child = track(spawn("taskset", ["-c", SERVER_CORE, process.execPath, join(here, "_speed.mjs")], { cwd: root, stdio: ["pipe", "pipe", "inherit"] }));
    const lines = createInterface({ input: child.stdout });
    const waiting = [];
    lines.on("line", (l) => waiting.shift()?.(Number(l)));
    child.once("exit", () => {
      for (const w of waiting.splice(0)) w(NaN);
      if (speedChild?.child === child) speedChild = undefined;
    });
    speedChild = { child, waiting };
  }
  const { child, waiting } = speedChild;
  return new Promise((resolve) => {
    waiting.push(resolve);
    child.stdin.write("\n");
  });
}

/** Ends the speed child, if one runs. */
export function endMachineSpeed() {
  speedChild?.child.stdin.end();
  speedChild = undefined;
}
