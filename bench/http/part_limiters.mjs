// Part 3: the keyed limiters in process, against rate-limiter-flexible and hono-rate-limiter.
// Runs bench/http/limiters_vs_peers.ts once per runtime per run (each run itself reports a
// median of 5 timed runs); the figure is the median over runs.
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { bin, built, median, root } from "./_lib.mjs";
import { envBlock, fmt, table } from "./_report.mjs";

const FILE = join("bench", "http", "limiters_vs_peers.ts");
const commands = {
  node: () => [process.execPath, ["--expose-gc", join(built, FILE.replace(/\.ts$/, ".js"))]],
  deno: () => [bin("deno"), ["run", "-A", "--v8-flags=--expose-gc", FILE]],
  bun: () => [bin("bun"), ["run", FILE]],
};

export async function limiters({ runtimes, env }) {
  // One process per runtime: the figure is already the median of 5 timed runs inside it.
  const runs = 1;
  const per = {};
  for (let run = 1; run <= runs; run++) {
    for (const rt of runtimes) {
      const [exe, args] = commands[rt]();
      const r = spawnSync("taskset", ["-c", "1", exe, ...args], { cwd: root, encoding: "utf8", timeout: 5 * 60_000 });
      const line = r.stdout.split("\n").find((l) => l.startsWith("RESULT "));
      if (!line) throw new Error(`limiters on ${rt} failed:\n${r.stdout}\n${r.stderr}`);
      const res = JSON.parse(line.slice(7));
      (per[rt] ??= []).push(res);
      console.log(`  run ${run} ${rt}: ${res.hot.map((h) => `${h.name} ${h.ns.toFixed(0)} ns`).join("; ")}`);
    }
  }
  const names = per[runtimes[0]][0].hot.map((h) => h.name);
  const heapNames = per[runtimes[0]][0].heaps.map((h) => h.name);
  const hot = (rt, name) => median(per[rt].map((r) => r.hot.find((h) => h.name === name).ns));
  const heap = (rt, name) => median(per[rt].map((r) => r.heaps.find((h) => h.name === name).mb));
  const kept = (name) => per[runtimes[0]][0].heaps.find((h) => h.name === name).keys;
  const md = [
    `# Part 3 — keyed limiters in process`,
    "",
    `One check on a hot key (the key exists, the limit is out of reach), ns per check: median of 5 timed runs of 1,000,000 checks (200,000 for the awaited rows) inside one process, one process per runtime. ` +
      `"Clock read" — each limiter reads its own clock (performance.now for serve-hygiene, Date.now for the peers). rate-limiter-flexible's \`consume\` returns a Promise, so it is timed awaited, beside serve-hygiene's fixed window awaited the same way.`,
    `Heap: \`heapUsed\` after a forced GC, before and after 1,000,000 distinct keys arrived inside one window (real clock, no time passes), with each limiter's defaults. Pinned to core 1.`,
    "",
    envBlock(env),
    "",
    `## ns per check, hot key`,
    "",
    table(["limiter", ...runtimes], names.map((n) => [n, ...runtimes.map((rt) => fmt.us(hot(rt, n)))])),
    "",
    `## heap after 1,000,000 distinct keys`,
    "",
    table(["limiter", "keys kept", ...runtimes.map((rt) => `${rt} MB`)], heapNames.map((n) => [n, kept(n), ...runtimes.map((rt) => heap(rt, n).toFixed(2))])),
    "",
  ];
  const summary = runtimes.map((rt) => `${rt}: ` + names.map((n) => `${n} ${fmt.us(hot(rt, n))} ns`).join(", ") + "; heap " + heapNames.map((n) => `${n} ${heap(rt, n).toFixed(2)} MB`).join(", ")).join("\n");
  return { files: { "limiters.md": md.join("\n"), "limiters.json": JSON.stringify({ env, per }, null, 1) }, summary };
}
