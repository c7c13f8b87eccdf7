// Cost of one hot-key check on each keyed limiter (with the time passed in and read from
// the clock), and the heap a limiter keeps after a million distinct keys went through it
// at its default key cap.
//
// On Node this file runs through tsx, which compiles with esbuild's keepNames: every named
// closure created per call is wrapped in Object.defineProperty(fn, "name"), ~100+ ns each.
// Code that makes a closure per call (a permit's or a slot's release) therefore reads slower
// here than from the tsc-built dist/, which has no such wrapper. Bundle this file with
// esbuild (no keepNames) and run it with plain node to see the difference.
import { createFixedWindowLimiter } from "../src/core/limits/fixed_window.ts";
import { createTokenBucketLimiter } from "../src/core/limits/token_bucket.ts";
import { createInFlightLimiter, type Slot } from "../src/core/limits/inflight_limit.ts";
import { createScopedLimiter } from "../src/core/limits/scopes.ts";
import { createClientKey } from "../src/core/limits/client_key.ts";
import { createConcurrencyLimit } from "../src/core/overload/concurrency_limit.ts";
import { measure, report } from "./_harness.ts";

// Budgets large enough that the hot key stays on the admit path for every run.
const window = createFixedWindowLimiter({ limit: 1e12, windowMs: 60_000 });
const bucket = createTokenBucketLimiter({ ratePerSecond: 1e9, burst: 1_000_000 });
const inflight = createInFlightLimiter();
const scoped = createScopedLimiter<string>({
  scopes: [
    { name: "global", limiter: createFixedWindowLimiter({ limit: 1e12 }) },
    { name: "tenant", limiter: createTokenBucketLimiter({ ratePerSecond: 1e9, burst: 1_000_000 }), key: (k) => k },
    { name: "ip", limiter: createFixedWindowLimiter({ limit: 1e12 }), key: (k) => k },
  ],
});
const lane = createConcurrencyLimit({ limit: 1024 });
const plain = new Map<string, { n: number }>([["10.0.0.1", { n: 0 }]]);
const HOT = "10.0.0.1";
let clockMs = performance.now();

report(
  "hot-key check",
  measure([
    { name: "baseline: Map.get + fresh object", run: (n) => { let s = 0; for (let i = 0; i < n; i++) { const e = plain.get(HOT)!; e.n++; s += ({ a: true, b: e.n }).b; } return s; } },
    { name: "baseline: performance.now()", run: (n) => { let s = 0; for (let i = 0; i < n; i++) s += performance.now(); return s; } },
    { name: "fixed window take (now passed)", run: (n) => { let s = 0; for (let i = 0; i < n; i++) s += window.take(HOT, 1, (clockMs += 0.001)).remaining; return s; } },
    { name: "fixed window take (clock read)", run: (n) => { let s = 0; for (let i = 0; i < n; i++) s += window.take(HOT).remaining; return s; } },
    { name: "token bucket take (now passed)", run: (n) => { let s = 0; for (let i = 0; i < n; i++) s += bucket.take(HOT, 1, (clockMs += 0.001)).remaining; return s; } },
    { name: "token bucket take (clock read)", run: (n) => { let s = 0; for (let i = 0; i < n; i++) s += bucket.take(HOT).remaining; return s; } },
    { name: "scoped take, 3 scopes (now passed)", run: (n) => { let s = 0; for (let i = 0; i < n; i++) s += scoped.take(HOT, 1, (clockMs += 0.001)).remaining; return s; } },
    { name: "lane alone: concurrency limit", run: (n) => { let s = 0; for (let i = 0; i < n; i++) { const r = lane.tryAcquire(); if (r.ok) { r.release(); s++; } } return s; } },
    { name: "in-flight tryAcquire + release", run: (n) => { let s = 0; for (let i = 0; i < n; i++) { const r = inflight.tryAcquire(HOT); if (r.ok) { r.release(); s++; } } return s; } },
  ]),
  "baseline: Map.get + fresh object",
);

// ---- churning flood: every request a new key at a full table (4,096 keys) ----
// Each stored entry ends exactly when the next unseen key arrives, so every unseen key finds
// the table full and exactly one entry to drop: the worst case for a prune that scans.
const CHURN_KEYS = 4096;
function churn(take: (key: string, now: number) => boolean) {
  let now = 0;
  let i = 0;
  for (; i < CHURN_KEYS; i++) take(`c${i}`, (now += 1));
  return (n: number) => {
    let s = 0;
    for (let k = 0; k < n; k++) if (take(`c${i++}`, (now += 1))) s++;
    return s;
  };
}
const churnWindow = createFixedWindowLimiter({ limit: 600, windowMs: CHURN_KEYS });
const churnBucket = createTokenBucketLimiter({ ratePerSecond: 1000 / CHURN_KEYS, burst: 1 });
const storedWindow = createFixedWindowLimiter({ limit: 1e12, windowMs: 60_000 });
for (let i = 0; i < CHURN_KEYS; i++) storedWindow.take(`s${i}`, 1, 0);
// In flight: 4,095 keys hold a slot; each request is a new key that takes and returns one.
const churnSlots = createInFlightLimiter({ maxKeys: CHURN_KEYS, overall: Infinity });
for (let i = 0; i < CHURN_KEYS - 1; i++) churnSlots.tryAcquire(`busy${i}`);
let slotKey = 0;
report(
  "churning flood at a full table (4,096 keys): ns per unseen key",
  measure([
    { name: "baseline: stored key, fixed window", run: (n) => { let s = 0; for (let k = 0; k < n; k++) s += storedWindow.take(`s${k & 4095}`, 1, 1).remaining; return s; } },
    { name: "fixed window, unseen key each request", run: churn((key, now) => churnWindow.take(key, 1, now).allowed) },
    { name: "token bucket, unseen key each request", run: churn((key, now) => churnBucket.take(key, 1, now).allowed) },
    { name: "in-flight, 4,095 busy, unseen key each", run: (n) => { let s = 0; for (let k = 0; k < n; k++) { const r = churnSlots.tryAcquire(`u${slotKey++}`); if (r.ok) { r.release(); s++; } } return s; } },
  ], { ops: 10_000 }),
  "baseline: stored key, fixed window",
);

const keyOf = createClientKey({ trustedProxies: ["10.0.0.0/8"] });
const bare = new Request("http://x/");
const forwarded = new Request("http://x/", { headers: { "x-forwarded-for": "203.0.113.9, 10.0.0.7" } });
const v4 = { peer: { address: "192.0.2.7" } };
const mapped = { peer: { address: "::ffff:192.0.2.7" } };
const v6 = { peer: { address: "2001:db8:1:2:aaaa:bbbb:cccc:dddd" } };
const proxy = { peer: { address: "10.0.0.2" } };
report(
  "client key",
  measure([
    { name: "IPv4 peer", run: (n) => { let s = 0; for (let i = 0; i < n; i++) s += keyOf(bare, v4).length; return s; } },
    { name: "IPv4-mapped peer", run: (n) => { let s = 0; for (let i = 0; i < n; i++) s += keyOf(bare, mapped).length; return s; } },
    { name: "IPv6 peer (/64)", run: (n) => { let s = 0; for (let i = 0; i < n; i++) s += keyOf(bare, v6).length; return s; } },
    { name: "trusted proxy + X-Forwarded-For", run: (n) => { let s = 0; for (let i = 0; i < n; i++) s += keyOf(forwarded, proxy).length; return s; } },
  ], { ops: 200_000 }),
);

// ---- heap after 1,000,000 distinct keys, default caps ----

type Gc = () => void;
async function findGc(): Promise<Gc | undefined> {
  const g = globalThis as { gc?: Gc; Bun?: { gc(force: boolean): void } };
  if (typeof g.gc === "function") return g.gc;
  if (g.Bun) return () => g.Bun!.gc(true);
  try {
    const v8 = await import("node:v8");
    const vm = await import("node:vm");
    v8.setFlagsFromString("--expose-gc");
    const gc = vm.runInNewContext("gc") as Gc | undefined;
    if (typeof gc === "function") return gc;
  } catch {
    // No way to force a collection here: the figures below are then noisier.
  }
  return undefined;
}

const gc = await findGc();
const heap = () => {
  gc?.();
  gc?.();
  return process.memoryUsage().heapUsed;
};
const mb = (bytes: number) => `${(bytes / 1048576).toFixed(2)} MB`;
const KEYS = 1_000_000;

function heapAfter(name: string, feed: () => { size: number; capacity: number }) {
  const before = heap();
  const t0 = performance.now();
  const { size, capacity } = feed();
  const seconds = (performance.now() - t0) / 1000;
  const after = heap();
  console.log(
    `  ${name.padEnd(36)} heap ${mb(before)} -> ${mb(after)} (${after - before >= 0 ? "+" : ""}${mb(after - before)}), ` +
      `table ${size}/${capacity}, ${((seconds * 1e9) / KEYS).toFixed(0)} ns/key`,
  );
  return { window, bucket };
}

console.log(`\nheap after ${KEYS.toLocaleString("en")} distinct keys (gc ${gc ? "forced" : "not available"})`);
{
  // 0.1 ms per key: 100 s of traffic, so windows end and the table is pruned on the way.
  const fw = createFixedWindowLimiter();
  heapAfter("fixed window (600/60 s, cap 4096)", () => {
    let now = 0;
    for (let i = 0; i < KEYS; i++) fw.take(`k${i}`, 1, (now += 0.1));
    return { size: fw.size.value, capacity: fw.size.capacity };
  });
  const tb = createTokenBucketLimiter({ ratePerSecond: 10, burst: 20 });
  heapAfter("token bucket (10/s, burst 20, cap 4096)", () => {
    let now = 0;
    for (let i = 0; i < KEYS; i++) tb.take(`k${i}`, 1, (now += 0.1));
    return { size: tb.size.value, capacity: tb.size.capacity };
  });
  const fl = createInFlightLimiter();
  heapAfter("in-flight (16/key, 1024 lane)", () => {
    const held: Slot[] = [];
    for (let i = 0; i < KEYS; i++) {
      if (held.length === 1024) held.shift()!.release();
      const r = fl.tryAcquire(`k${i}`);
      if (r.ok) held.push(r);
    }
    const size = fl.size.value;
    for (const s of held) s.release();
    return { size, capacity: fl.size.capacity };
  });
  // Keep the limiters alive across the last heap reading.
  void [fw.size.value, tb.size.value, fl.size.value];
}
