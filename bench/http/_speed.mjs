// This machine's speed at a moment: one fixed memory-bound loop (2 million random reads over
// 16 MB; ~13 ms on a quiet core here, up to ~30 ms while the host is contended). Used by
// scripts/probes/machine_speed.mjs, and by parts 1 and 6 (bench/http/_rounds.mjs), which time
// it on the servers' core before every measured slice. Run as a script, it times the loop
// once per line it reads on stdin and prints the best of three runs in ms.
import { createInterface } from "node:readline";

const data = new Float64Array(1 << 21);
for (let i = 0; i < data.length; i++) data[i] = i;

/** Runs the loop once; returns its time in ms. */
export function speedLoopMs() {
  const t = performance.now();
  let sum = 0;
  let j = 1;
  for (let k = 0; k < 2_000_000; k++) {
    j = (j * 1103515245 + 12345) & ((1 << 21) - 1);
    sum += data[j];
  }
  if (sum < 0) console.log(sum); // keeps the loop from being optimized away
  return performance.now() - t;
}
for (let i = 0; i < 5; i++) speedLoopMs(); // optimized before the first timed run

if (process.argv[1] === new URL(import.meta.url).pathname) {
  for await (const _ of createInterface({ input: process.stdin })) {
    console.log(Math.min(speedLoopMs(), speedLoopMs(), speedLoopMs()).toFixed(2));
  }
}
