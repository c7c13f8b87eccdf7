// Probe (the machine, not a runtime): how steady is this machine's speed over seconds? One fixed
// memory-bound loop (bench/http/_speed.mjs: 2 million random reads over 16 MB) runs every
// 200 ms on the core the benchmark servers are pinned to, and each run's time is printed ÷ the
// fastest run. A benchmark that divides one run's CPU per request by another's taken a minute
// apart measures this as much as the code: parts 1 and 6 therefore measure their cases in
// short slices in turn, and time this loop before each slice (bench/http/_rounds.mjs).
// Run (nothing else running): taskset -c 1 node scripts/probes/machine_speed.mjs [seconds=60]
// Measured 2026-12-05 around 08:30 UTC (2-core AMD EPYC VM, Node 20.20), 60 s, 267 runs: fastest
// 13.4 ms, median 26.5 ms, slowest 31.0 ms. The runs sat near 2.0× the fastest for most of the
// minute and fell to 1.0-1.2× in episodes of a few seconds (several runs in a row), e.g.
//   ... 2.03 2.02 1.99 2.04 1.47 2.04 1.18 1.90 1.49 ... 1.46 1.68 1.14 1.08 1.09 1.04 1.04 1.05
//   1.08 1.04 1.04 1.14 1.13 1.14 1.47 2.15 2.01 2.11 ...
// Around 08:37 UTC, 20 s of it read 1.00-1.19× throughout (a quiet host).
import { speedLoopMs } from "../../bench/http/_speed.mjs";

const times = [];
const end = Date.now() + Number(process.argv[2] ?? 60) * 1000;
while (Date.now() < end) {
  times.push(speedLoopMs());
  await new Promise((resolve) => setTimeout(resolve, 200));
}
const sorted = [...times].sort((a, b) => a - b);
const ms = (v) => v.toFixed(1);
console.log(`${times.length} runs: fastest ${ms(sorted[0])} ms, median ${ms(sorted[sorted.length >> 1])} ms, slowest ${ms(sorted.at(-1))} ms`);
console.log(`each ÷ the fastest, in order: ${times.map((t) => (t / sorted[0]).toFixed(2)).join(" ")}`);
