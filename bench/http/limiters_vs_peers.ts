// Part 3 (in process, on each runtime): one check on a hot key for each of serve-hygiene's
// keyed limiters against rate-limiter-flexible's memory limiter and hono-rate-limiter's
// memory store, and the heap each keeps after 1,000,000 distinct keys arrived within one
// window (real clock, defaults: ours are bounded by their key cap, 4,096). Prints
// `RESULT {json}` for bench/http/run.mjs. Run with a GC exposed (--expose-gc, Bun.gc).
import { RateLimiterMemory } from "rate-limiter-flexible";
import { MemoryStore } from "hono-rate-limiter";
import { createFixedWindowLimiter, createInFlightLimiter, createTokenBucketLimiter } from "../../src/mod.ts";
import { measure, measureAsync, runtimeName } from "../_harness.ts";

const HOT = "10.0.0.1";
const fixed = createFixedWindowLimiter({ limit: 1e12, windowMs: 60_000 });
const bucket = createTokenBucketLimiter({ ratePerSecond: 1e9, burst: 1_000_000 });
const inflight = createInFlightLimiter();
const flexible = new RateLimiterMemory({ points: 1e12, duration: 60 });
const store = new MemoryStore();
store.init({ windowMs: 60_000 } as Parameters<MemoryStore["init"]>[0]);

const sync = measure([
  { name: "serve-hygiene fixed window take", run: (n) => { let s = 0; for (let i = 0; i < n; i++) s += fixed.take(HOT).remaining; return s; } },
  { name: "serve-hygiene token bucket take", run: (n) => { let s = 0; for (let i = 0; i < n; i++) s += bucket.take(HOT).remaining; return s; } },
  { name: "serve-hygiene in-flight tryAcquire + release", run: (n) => { let s = 0; for (let i = 0; i < n; i++) { const r = inflight.tryAcquire(HOT); if (r.ok) { r.release(); s++; } } return s; } },
  { name: "hono-rate-limiter MemoryStore increment", run: (n) => { let s = 0; for (let i = 0; i < n; i++) s += (store.increment(HOT) as { totalHits: number }).totalHits; return s; } },
], { ops: 1_000_000, runs: 5 });
// rate-limiter-flexible answers with a Promise: time it awaited, next to ours awaited too.
const awaited = await measureAsync([
  { name: "rate-limiter-flexible RateLimiterMemory consume (awaited)", run: async (n) => { let s = 0; for (let i = 0; i < n; i++) s += (await flexible.consume(HOT)).remainingPoints; return s; } },
  { name: "serve-hygiene fixed window take (awaited)", run: async (n) => { let s = 0; for (let i = 0; i < n; i++) s += (await fixed.take(HOT)).remaining; return s; } },
], { ops: 200_000, runs: 5 });
store.shutdown();

// ---- heap after 1,000,000 distinct keys ----
type Gc = () => void;
const g = globalThis as { gc?: Gc; Bun?: { gc(force: boolean): void } };
const gc: Gc | undefined = typeof g.gc === "function" ? g.gc : g.Bun ? () => g.Bun!.gc(true) : undefined;
const heap = () => {
  gc?.();
  gc?.();
  return process.memoryUsage().heapUsed;
};
const KEYS = 1_000_000;
const heaps: { name: string; mb: number; keys: string }[] = [];
async function heapAfter(name: string, feed: () => unknown | Promise<unknown>, keys: () => string) {
  const before = heap();
  const keep = await feed();
  const after = heap();
  heaps.push({ name, mb: (after - before) / 1048576, keys: keys() });
  return keep;
}
const fw = createFixedWindowLimiter();
await heapAfter("serve-hygiene fixed window (600 / 60 s, cap 4,096)", () => { for (let i = 0; i < KEYS; i++) fw.take(`k${i}`); }, () => `${fw.size.value} kept`);
const tb = createTokenBucketLimiter({ ratePerSecond: 10, burst: 20 });
await heapAfter("serve-hygiene token bucket (10/s, burst 20, cap 4,096)", () => { for (let i = 0; i < KEYS; i++) tb.take(`k${i}`); }, () => `${tb.size.value} kept`);
const rl = new RateLimiterMemory({ points: 600, duration: 60 });
await heapAfter("rate-limiter-flexible RateLimiterMemory (600 / 60 s)", async () => { for (let i = 0; i < KEYS; i++) await rl.consume(`k${i}`); }, () => "all kept (a timer each)");
const ms = new MemoryStore();
ms.init({ windowMs: 60_000 } as Parameters<MemoryStore["init"]>[0]);
await heapAfter("hono-rate-limiter MemoryStore (60 s window)", () => { for (let i = 0; i < KEYS; i++) ms.increment(`k${i}`); }, () => `${(ms as unknown as { current: Map<string, unknown> }).current.size} kept`);
void [fw.size.value, tb.size.value];

console.log(`RESULT ${JSON.stringify({ runtime: runtimeName(), gc: gc !== undefined, hot: [...sync, ...awaited].map((r) => ({ name: r.name, ns: r.nsPerOp })), heaps })}`);
ms.shutdown();
// rate-limiter-flexible keeps a timer per key alive for 60 s.
process.exit(0);
