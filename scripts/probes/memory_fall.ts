// Probe: what falls after allocate-then-free, on the runtime that runs this file.
//
//   node --import tsx scripts/probes/memory_fall.ts [heap|buffers|mixed] [gc|nogc] [seconds]
//   deno run -A scripts/probes/memory_fall.ts [heap|buffers|mixed] [gc|nogc] [seconds]
//   bun run scripts/probes/memory_fall.ts [heap|buffers|mixed] [gc|nogc] [seconds]
//
// Allocates ~256 MB and keeps it (heap: small JS objects and strings; buffers: 64 KiB
// Uint8Arrays, below malloc's mmap threshold, the size of an HTTP body chunk; mixed: both),
// drops every reference, then prints one reading every 500 ms for `seconds` (default 10): RSS, heap used,
// external and array buffers (MB). With "gc" it forces full collections after the free
// (Bun.gc(true); V8: --expose-gc turned on at run time), with "nogc" it leaves the
// runtime alone, as a server's idle process would be. A little garbage is made between
// readings, as refused requests would make, so a collector that waits for allocation gets it.
//
// Measured 2026-12-02 (node 20.20, deno 2.9.6, bun 1.4.5), 256 MB allocated then freed (MB):
//   node  heap,    no GC: heapUsed 670 and RSS 780 stay for 60 s (no major collection while idle)
//   node  heap,    gc:    heapUsed 670 → 5, RSS 790 → 127 (V8 gives its pages back after a full GC)
//   node  buffers, no GC: external 258 → 2 at ~10 s; RSS 334 → 328, kept for 60 s
//   node  buffers, gc:    external 258 → 2 at once; RSS stays 335 (malloc keeps its arenas)
//   deno  heap,    no GC: heapUsed 685 → 5 at ~26 s, RSS 793 → 66 at ~38 s
//   deno  heap,    gc:    heapUsed 687 → 4, RSS 782 → 59
//   deno  buffers, no GC: external 257 → 1 within 30 s; RSS ~300, kept for 60 s
//   deno  buffers, gc:    external 257 → 1 at once; RSS stays ~295
//   bun   heap / buffers, with or without gc: heapUsed, external and RSS all fall within
//         ~1–3 s (655 → 40 and 286 → 31); JSC's heapUsed counts 47.5 MB for 64 MB of buffers.
// So RSS is no clear signal on Node and Deno; live memory (heapUsed + external) is, once a
// collection has run — which an idle Node process may not do by itself.
import { collectGarbage } from "../../test/support/memory.ts";

const mode = (globalThis as { Deno?: { args: string[] } }).Deno?.args ?? process.argv.slice(2);
const shape = mode[0] ?? "mixed";
const force = (mode[1] ?? "nogc") === "gc";
const seconds = Number(mode[2] ?? 10);
const runtime = "Bun" in globalThis ? "bun" : "Deno" in globalThis ? "deno" : "node";

type Reading = { rss: number; heapUsed: number; external: number; arrayBuffers?: number };
const read = (): Reading => {
  const deno = (globalThis as { Deno?: { memoryUsage(): Reading } }).Deno;
  return deno !== undefined ? deno.memoryUsage() : process.memoryUsage();
};
const mb = (n: number | undefined) => (n === undefined ? "-" : (n / 1048576).toFixed(1));
const line = (label: string) => {
  const r = read();
  console.log(JSON.stringify({
    runtime, shape, gc: force, at: label,
    rssMb: mb(r.rss), heapUsedMb: mb(r.heapUsed), externalMb: mb(r.external), arrayBuffersMb: mb(r.arrayBuffers),
    liveMb: mb(r.heapUsed + r.external),
  }));
};

// The same forced collection the reliability suite uses (Bun.gc(true); V8: --expose-gc at run time).
const gc = force && collectGarbage() ? collectGarbage : undefined;
if (force && gc === undefined) console.log(JSON.stringify({ runtime, note: "no forced GC available" }));

const TOTAL = 256 * 1024 * 1024;
let hoard: unknown[] = [];
line("start");
if (shape === "heap" || shape === "mixed") {
  const target = shape === "heap" ? TOTAL : TOTAL / 2;
  // ~100 bytes an object (an object with a fresh string), so target / 100 objects.
  for (let i = 0; i < target / 100; i++) hoard.push({ i, s: `item-${i}-${"x".repeat(40)}` });
}
if (shape === "buffers" || shape === "mixed") {
  const target = shape === "buffers" ? TOTAL : TOTAL / 2;
  for (let i = 0; i < target / 65536; i++) hoard.push(new Uint8Array(65536).fill(i & 255));
}
line("allocated");
hoard = [];
line("freed");
if (gc !== undefined) {
  gc();
  gc();
  line("after-gc");
}
let sink: unknown;
for (let t = 1; t <= seconds * 2; t++) {
  await new Promise((r) => setTimeout(r, 500));
  // ~200 KB of short-lived garbage a tick, like a trickle of refused requests.
  for (let i = 0; i < 2000; i++) sink = { i, s: `r-${i}` };
  line(`+${t * 500}ms`);
}
void sink;
