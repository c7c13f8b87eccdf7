import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { type AdaptiveLimit, createAdaptiveLimit } from "../../../src/core/overload/adaptive_limit.ts";
import { createManualClock } from "../../../src/testing/manual_clock.ts";
import fc from "fast-check";

// A server under a closed-loop storm keeps every permit busy: each window, `limit` requests
// are in flight and their latency is what the model says it is at that concurrency.
type Model = (inFlight: number) => number;
/** CPU-bound on one core: each request is 2 ms of work, so n in flight take 2n ms. */
const cpu: Model = (n) => 2 * n;
/** Waiting on a 20 ms upstream, then 0.2 ms of CPU: latency grows only past 100 in flight. */
const io = (upstreamMs = 20): Model => (n) => Math.max(upstreamMs, 0.2 * n);

/** Runs `windows` windows of 10 samples each, 20 ms apart; returns the limit after each window. */
function drive(adaptive: AdaptiveLimit, clock: ReturnType<typeof createManualClock>, model: Model, windows: number, demand = Infinity): number[] {
  const limits: number[] = [];
  for (let w = 0; w < windows; w++) {
    const inFlight = Math.min(adaptive.limit, demand);
    const span = Math.max(100, 2 * (adaptive.baselineMs ?? 0));
    for (let i = 0; i < 10; i++) {
      clock.advance(Math.ceil(span / 10) + 1);
      adaptive.sample(model(inFlight), inFlight, clock.now());
    }
    limits.push(adaptive.limit);
  }
  return limits;
}

/**
 * Ten samples 12 ms apart of `latencyMs` at `inFlight`, `long` of them held from before the
 * window: each call closes its own window (at least 100 ms and 10 samples).
 */
const windows = (limit: AdaptiveLimit, clock: ReturnType<typeof createManualClock>) => (latencyMs: number, inFlight: number, long: number) => {
  for (let i = 0; i < 10; i++) {
    clock.advance(12);
    limit.sample(latencyMs, inFlight, clock.now(), inFlight, long);
  }
};

const max = (xs: number[]) => Math.max(...xs);
const min = (xs: number[]) => Math.min(...xs);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;

describe("adaptive limit", () => {
  test("adaptive limit: converges near the knee of a queueing model, from below and after a step in capacity", () => {
    const clock = createManualClock();
    const a = createAdaptiveLimit();
    const limits = drive(a, clock, io(), 300);
    const settled = limits.slice(100);
    // Below 100 in flight nothing queues; past 150 the latency is over 1.5× (the default
    // tolerance, Gradient2's) the baseline. At 2 it settled at 200–214: twice the knee's latency.
    assert.ok(min(settled) >= 140 && max(settled) <= 180, `settled within [140, 180]: ${min(settled)}..${max(settled)}`);
    assert.equal(a.baselineMs, 20);
  });

  // A review (the uptime angle): a window left open when traffic stopped was closed a day later
  // by the first fresh sample, its mean (272 ms) read from the stale ones, and the limit halved.
  test("adaptive limit: a window left open across an idle spell is begun again, not judged by the samples before it", () => {
    for (const stale of [false, true]) {
      let queueing = false;
      const a = createAdaptiveLimit({ queueing: () => queueing });
      let now = 0;
      for (let i = 0; i < 2000; i++) a.sample(20, a.limit, (now += 2));
      for (let i = 0; i < 30; i++) a.sample(45, a.limit, (now += 10)); // ends slow start
      for (let i = 0; i < 2000; i++) a.sample(20, a.limit, (now += 2));
      const w = a.windows;
      while (a.windows === w) a.sample(20, a.limit, (now += 2));
      const limit = a.limit;
      assert.equal(a.baselineMs, 20);
      // Nine slow samples, one short of a window, then a day without traffic.
      if (stale) for (let i = 0; i < 9; i++) a.sample(300, 3, (now += 100));
      now += 86_400_000;
      queueing = true; // the first CPU reading after an idle spell is unknown, read as queueing
      const before = a.windows!;
      for (let i = 0; i < 10; i++) a.sample(20, 3, (now += 150));
      assert.equal(a.windows, before + 1, "today's samples make a window of their own");
      assert.equal(a.limit, limit, `stale samples: ${stale}`);
    }
    // A window filled slowly (a request every 8 s, ten to a window) is no idle spell: it closes.
    const slow = createAdaptiveLimit({ queueing: () => false });
    let t = 0;
    for (let i = 0; i < 2000; i++) slow.sample(20, slow.limit, (t += 2));
    for (let i = 0; i < 30; i++) slow.sample(45, slow.limit, (t += 10)); // ends slow start
    const w = slow.windows!;
    for (let i = 0; i < 450; i++) slow.sample(20, 1, (t += 8000));
    assert.ok(slow.windows! - w >= 40, `${slow.windows! - w} windows in an hour`);
  });

  test("adaptive limit: CPU-bound work keeps the limit small (latency grows with every permit)", () => {
    const clock = createManualClock();
    const a = createAdaptiveLimit();
    const limits = drive(a, clock, cpu, 300);
    // One core: a second permit only doubles the latency (the window lags a change of the
    // limit by one, hence a sawtooth of 1–5 rather than a flat 1). From a start at 20 (a baseline
    // measured with 20 already queueing) it stays bounded, though higher.
    assert.ok(max(limits) <= 5, `at most 5 (10 ms) from the default start: ${max(limits)}`);
    assert.ok(median(limits.slice(50)) <= 3, `mostly 1–3: median ${median(limits.slice(50))}`);
    const late = createAdaptiveLimit({ initialLimit: 20 });
    const fromHigh = drive(late, clock, cpu, 300);
    assert.ok(max(fromHigh) <= 80, `bounded from a start at 20 too, though higher (its baseline holds 20 in the queue): ${max(fromHigh)}`);
  });

  test("adaptive limit: does not creep up under a moderate, steady overload", () => {
    const clock = createManualClock();
    const a = createAdaptiveLimit({ initialLimit: 20 });
    // A pool of 20 workers, 10 ms each: past 20 in flight the latency grows in proportion.
    const pool: Model = (n) => 10 * Math.max(1, n / 20);
    const limits = drive(a, clock, pool, 5000);
    const late = limits.slice(100);
    // Equilibrium: 1.5× the pool's latency (the tolerance) at 30 in flight, plus one allowance of √30.
    assert.ok(max(late) <= 37, `bounded after 5,000 windows: max ${max(late)}`);
    assert.ok(max(limits.slice(-500)) <= max(limits.slice(100, 600)), "no higher at the end than early on");
    assert.ok(min(late) >= 15, `and not throttled below the pool: min ${min(late)}`);
  });

  test("adaptive limit: recovers after an overload once latency is back to normal", () => {
    const clock = createManualClock();
    const a = createAdaptiveLimit();
    const before = drive(a, clock, io(), 200).at(-1)!;
    // Everything is slow for a while (a co-tenant, a GC storm), whatever the limit.
    const during = drive(a, clock, () => 200, 40);
    assert.ok(min(during) < before * 0.7, `the limit came down: ${min(during)} from ${before}`);
    const after = drive(a, clock, io(), 40);
    assert.ok(after.at(-1)! >= before * 0.9, `back to ${after.at(-1)} of ${before} within 40 windows`);
  });

  test("adaptive limit: an upstream that slows down is not throttled (halving the limit did not help: the baseline rises)", () => {
    const clock = createManualClock();
    const a = createAdaptiveLimit();
    drive(a, clock, io(20), 200);
    const limits = drive(a, clock, io(60), 200);
    assert.ok(limits.at(-1)! >= 100, `waiting work keeps its permits: ${limits.at(-1)}`);
    assert.ok(a.baselineMs! >= 60, `rebased to the slower upstream: ${a.baselineMs}`);
  });

  // A review: a 90 % fast / 10 % slow mix at a few percent of a core, long polls and a slower
  // upstream were read as overload (the baseline the fastest window, every window with a slow
  // request 50× over it) and refused. Slower windows while the loop is on time are waiting work.
  test("adaptive limit: given a way to tell, a slower window while nothing queues in the process (work that waits) grows the limit as one within tolerance; while work queues for the CPU it shrinks", () => {
    const clock = createManualClock();
    let queued = false;
    const a = createAdaptiveLimit({ queueing: () => queued });
    assert.equal(typeof a.queueing, "function");
    // A mix of fast and slow routes: one window in five holds only fast requests (0.1 ms), the others read 10 ms.
    let i = 0;
    const mix: Model = () => (i++ % 50 < 10 ? 0.1 : 10);
    const calm = drive(a, clock, mix, 60);
    assert.ok(a.baselineMs! <= 1, `the baseline is the fast windows': ${a.baselineMs}`);
    assert.ok(min(calm.slice(10)) >= 16 && calm.at(-1)! >= max(calm.slice(0, 10)), `never shrinks while the loop is on time: ${calm.join(",")}`);
    queued = true;
    const busy = drive(a, clock, () => 10, 10);
    assert.ok(busy.at(-1)! < calm.at(-1)! * 0.7, `shrinks once work queues: ${busy.join(",")}`);
    // The same windows with no way to tell shrink the limit as before.
    const blind = createAdaptiveLimit();
    const clock2 = createManualClock();
    let j = 0;
    const mix2: Model = () => (j++ % 50 < 10 ? 0.1 : 10);
    const limits = drive(blind, clock2, mix2, 60);
    assert.ok(min(limits.slice(30)) < calm.at(-1)! / 2, `without it: ${limits.join(",")}`);
    assert.throws(() => createAdaptiveLimit({ queueing: 5 as never }), /"queueing" must be a function/);
    assert.equal(createAdaptiveLimit().queueing, undefined);
  });

  test("adaptive limit: with kinds (routes), each sample is read against its own kind's no-queue latency: a slow route joining a fast one is no queueing, even with the CPU busy; a slowdown of the mix still shrinks the limit", () => {
    const run = (kinds: boolean) => {
      const clock = createManualClock();
      const a = createAdaptiveLimit({ initialLimit: 40, queueing: () => true });
      // Ten samples 12 ms apart, the first `slow` of them the slow route's (200 ms + `queued`), the rest the fast one's (1 ms + `queued`).
      const window = (slow: number, queued = 0) => {
        for (let i = 0; i < 10; i++) {
          clock.advance(12);
          const isSlow = i < slow;
          a.sample((isSlow ? 200 : 1) + queued, a.limit, clock.now(), undefined, undefined, kinds ? (isSlow ? "/slow" : "/fast") : undefined);
        }
        return a.limit;
      };
      window(0);
      window(0);
      window(0, 0.6); // 1.6 times the baseline: slow start ends (its windows read only the requests that began in them)
      return { before: a.limit, window };
    };
    const one = run(false);
    assert.ok(one.window(3) <= one.before / 2, "one baseline: the mix reads 60 times slower, queueing (the CPU is busy): halved");
    const own = run(true);
    const mixed = [own.window(3), own.window(3), own.window(4), own.window(2)];
    assert.ok(min(mixed) >= own.before, `each route against its own: never shrinks (${own.before} → ${mixed.join(",")})`);
    // 100 ms of queueing on every request: (7 × 101 + 3 × 300) ÷ (7 × 1 + 3 × 200) = 2.6 times the mix's own latency.
    const slowed = [own.window(3, 100), own.window(3, 100)];
    assert.ok(slowed[1]! < mixed.at(-1)!, `a slowdown of the mix shrinks it: ${slowed.join(",")}`);
  });

  test("adaptive limit: one kind alone reads exactly as no kind (any samples: long work, loans, slow start, queueing or not)", () => {
    const step = fc.record({
      advance: fc.integer({ min: 0, max: 60 }),
      latency: fc.oneof(fc.integer({ min: 0, max: 400 }), fc.double({ min: 0, max: 400, noNaN: true })),
      inFlight: fc.integer({ min: 0, max: 300 }),
      extraHeld: fc.integer({ min: 0, max: 50 }),
      long: fc.integer({ min: 0, max: 300 }),
      queueing: fc.boolean(),
      stall: fc.integer({ min: 0, max: 20 }), // 0: stalled(atLeast), else nothing
    });
    fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: 400 }), fc.integer({ min: 1, max: 64 }), (steps, initialLimit) => {
        const clock = createManualClock();
        let queued = false;
        const plain = createAdaptiveLimit({ initialLimit, queueing: () => queued });
        const kinded = createAdaptiveLimit({ initialLimit, queueing: () => queued });
        for (const s of steps) {
          clock.advance(s.advance);
          queued = s.queueing;
          if (s.stall === 0) {
            plain.stalled(s.inFlight);
            kinded.stalled(s.inFlight);
          }
          plain.sample(s.latency, s.inFlight, clock.now(), s.inFlight + s.extraHeld, s.long);
          kinded.sample(s.latency, s.inFlight, clock.now(), s.inFlight + s.extraHeld, s.long, "/only");
          if (plain.limit !== kinded.limit || plain.baselineMs !== kinded.baselineMs || plain.lent !== kinded.lent) return false;
        }
        return true;
      }),
      { numRuns: 300 },
    );
  });

  test("adaptive limit: kinds are bounded — 2 new ones a window, 64 at once, an idle one making room after 100 windows — and a sample of a kind with no room reads against the window's baseline: a storm over new paths still shrinks the limit", () => {
    const setup = () => {
      const clock = createManualClock();
      const a = createAdaptiveLimit({ initialLimit: 20, maxLimit: 20, queueing: () => true });
      const window = (kindOf: (i: number) => string, ms: number) => {
        for (let i = 0; i < 10; i++) {
          clock.advance(12);
          a.sample(ms, a.limit, clock.now(), undefined, undefined, kindOf(i));
        }
        return a.limit;
      };
      window(() => "/", 1);
      window(() => "/", 1.6); // slow start ends
      return { a, window };
    };
    // A storm of 100 ms requests, each on a path never seen: 2 a window are taken in at their first
    // window's latency, the rest read against the window's baseline (1 ms).
    const storm = setup();
    const before = storm.a.limit;
    let n = 0;
    const stormed = [storm.window(() => `/items/${n++}`, 100), storm.window(() => `/items/${n++}`, 100)];
    assert.ok(stormed[1]! < before / 2, `shrinks: ${before} → ${stormed.join(",")}`);
    // 64 kinds of 1 ms, 2 a window; then a new kind of 100 ms finds no room: read against the window's 1 ms.
    const full = setup();
    for (let w = 0; w < 32; w++) full.window((i) => `/k${w * 2 + (i % 2)}`, 1);
    const level = full.a.limit;
    assert.ok(full.window(() => "/late", 100) < level, "no room: against the window's baseline");
    // After 100 windows with only /k0 sampled, the rest make room: a new kind's first window is at its own latency.
    const idle = setup();
    for (let w = 0; w < 32; w++) idle.window((i) => `/k${w * 2 + (i % 2)}`, 1);
    for (let w = 0; w < 101; w++) idle.window(() => "/k0", 1);
    const settled = idle.a.limit;
    assert.ok(idle.window(() => "/fresh", 100) >= settled && idle.window(() => "/fresh", 100) >= settled, `a kind of its own again: ${settled} → ${idle.a.limit}`);
  });

  test("adaptive limit: no periodic re-measurement drops a steady limit to its floor", () => {
    const clock = createManualClock();
    const a = createAdaptiveLimit();
    const limits = drive(a, clock, io(), 10_000).slice(200);
    assert.ok(min(limits) >= 0.8 * max(limits), `steady within 20% for ~30 simulated minutes: ${min(limits)}..${max(limits)}`);
    assert.ok(min(limits) > a.minLimit * 10);
  });

  test("adaptive limit: does not grow while fewer than half its permits are used (app-limited)", () => {
    const clock = createManualClock();
    const a = createAdaptiveLimit({ initialLimit: 40 });
    const limits = drive(a, clock, io(), 500, 19);
    assert.equal(max(limits), 40, "19 of 40 in use: the latency says nothing about the limit");
    const busy = drive(a, clock, io(), 5, 20);
    assert.ok(busy.at(-1)! > 40, "half in use: it grows");
  });

  test("adaptive limit: a window needs its samples (after slow start, which needs only time); negative or NaN latency is not a sample", () => {
    const a = createAdaptiveLimit({ initialLimit: 10, windowSamples: 5, windowMs: 1 });
    a.sample(10, 10, 0);
    a.sample(10, 10, 1); // slow start: the span is enough
    assert.equal(a.baselineMs, 10);
    a.sample(40, 20, 100); // over tolerance (a request that began in this window): slow start ends
    for (const t of [160, 170, 180, 190]) a.sample(5, 10, t);
    a.sample(-5, 10, 195);
    a.sample(Number.NaN, 10, 196);
    assert.equal(a.baselineMs, 10, "four samples are not a window");
    a.sample(5, 10, 200);
    assert.equal(a.baselineMs, 5);
  });

  test("adaptive limit: a clock coarser than the work (every latency 0 ms) leaves the limit a whole number in [min, max], read against 1 ms", () => {
    const a = createAdaptiveLimit({ initialLimit: 4, minLimit: 2, maxLimit: 64, windowMs: 10, windowSamples: 1 });
    let now = 0;
    for (let i = 0; i < 20; i++) {
      a.sample(0, a.limit, (now += 20));
      assert.ok(Number.isInteger(a.limit) && a.limit >= 2 && a.limit <= 64, `window ${i}: ${a.limit}`);
    }
    assert.equal(a.baselineMs, 0);
    assert.equal(a.limit, 64, "no latency measured: it grew to its max");
    // Against a 0 baseline, 1 ms is the base: 1.2 ms is within the 1.5 tolerance, 10 ms is not.
    for (let i = 0; i < 5; i++) a.sample(1.2, a.limit, (now += 20));
    assert.equal(a.limit, 64);
    for (let i = 0; i < 5; i++) a.sample(10, a.limit, (now += 20));
    assert.ok(a.limit < 64 && a.limit >= 2 && Number.isInteger(a.limit), `backs off over tolerance: ${a.limit}`);
  });

  test("adaptive limit: slow start reads its first two windows over windowMs, then windows of twice the latency (at least windowMs / 2); rampedAt marks its last doubling", () => {
    // A fresh process meeting work that waits 20 ms upstream, a request completing every ms.
    const a = createAdaptiveLimit();
    assert.equal(a.rampedAt, -Infinity, "before any sample");
    const limits: number[] = [];
    const ramped: number[] = [];
    for (let t = 1; t <= 600; t++) {
      a.sample(20, a.limit, t);
      limits[t] = a.limit;
      ramped[t] = a.rampedAt!;
    }
    assert.equal(ramped[1], 1, "the first sample starts the ramp");
    assert.equal(limits[100], 1, "the first window (limit 1, where the baseline is read) lasts windowMs");
    assert.equal(limits[101], 2);
    assert.equal(ramped[101], 101, "each doubling moves rampedAt");
    assert.equal(limits[200], 2, "so does the second (limit 2)");
    assert.equal(limits[201], 4);
    assert.equal(limits[251], 8, "then a window lasts max(windowMs / 2, 2 × baseline): 50 ms");
    const reached = limits.findIndex((l) => l >= 64);
    assert.equal(reached, 401, "64 permits 400 ms after the first sample (windowMs windows throughout took 600 ms)");
    // Latency over tolerance ends slow start: no more ramp.
    for (let t = 601; t <= 1000; t++) a.sample(100, a.limit, t);
    assert.equal(a.rampedAt, -Infinity);
    // Once ended, windows are windowMs long again, and growth is by the queue allowance (the
    // first window closing here still holds slow samples).
    const changes: [number, number, number][] = [];
    for (let t = 1001; t <= 1600; t++) {
      const before = a.limit;
      a.sample(a.baselineMs!, a.limit, t);
      if (a.limit !== before) changes.push([t, before, a.limit]);
    }
    changes.shift();
    assert.ok(changes.length >= 3, `the limit grew again: ${JSON.stringify(changes)}`);
    for (let i = 1; i < changes.length; i++) assert.ok(changes[i]![0] - changes[i - 1]![0] >= 100, `windows of windowMs: ${JSON.stringify(changes)}`);
    for (const [, from, to] of changes) assert.ok(to > from && to < 2 * from, `by the allowance, not doubled: ${from} → ${to}`);
    assert.equal(a.rampedAt, -Infinity);
  });

  test("adaptive limit: a slow-start window is read from the requests that began in it, so a doubling that queues stops slow start at once", () => {
    const a = createAdaptiveLimit();
    let t = 0;
    while (a.limit < 128) a.sample(20, a.limit, ++t);
    const doubled = t;
    // Just after the doubling, the requests admitted before it complete at the old latency...
    for (; t < doubled + 20; t++) for (let k = 0; k < 6; k++) a.sample(20, 128, t + 1);
    // ...while those admitted under 128 queue: 45 ms, over tolerance (1.5 × 20). Read together
    // with the others (a mean of 25 ms at 50 ms), they would have doubled the limit again.
    for (t = doubled + 45; t < doubled + 200; t++) for (let k = 0; k < 6; k++) a.sample(45, 128, t);
    assert.ok(a.limit < 128, `slow start stopped at the doubling that queued, and the limit fell: ${a.limit}`);
    assert.equal(a.rampedAt, -Infinity);
  });

  test("adaptive limit: a baseline read across a freeze (a process paused while its first window was open) is replaced within 10 × windowMs of normal work, and slow start goes on", () => {
    const a = createAdaptiveLimit();
    a.sample(10, 1, 0); // the first request: 10 ms
    a.sample(3_000, 1, 3_000); // the next one was in flight across a 3 s freeze
    assert.equal(a.baselineMs, 1_505, "the first window's mean");
    let t = 3_000;
    let replaced: number | undefined;
    while (t < 9_000) {
      t += 10;
      a.sample(10, a.limit, t);
      if (replaced === undefined && (a.baselineMs as number) === 10) replaced = t;
    }
    assert.ok(replaced !== undefined && replaced <= 3_000 + 1_000 + 10, `the frozen baseline held until ${replaced} (windows of twice 1,505 ms)`);
    assert.ok(a.limit >= 64, `slow start went on: limit ${a.limit}`);
  });

  test("adaptive limit: stalled grows by the queue allowance, from atLeast when that is higher, never past maxLimit", () => {
    const limit = createAdaptiveLimit({ initialLimit: 4, maxLimit: 200 });
    limit.stalled();
    assert.equal(limit.limit, 6, "4 + √4");
    limit.stalled(100);
    assert.equal(limit.limit, 110, "100 + √100: room beyond what it holds");
    for (const odd of [3, Number.NaN, -1, "500" as never]) limit.stalled(odd);
    assert.ok(limit.limit > 110 && limit.limit < 200, `lower or odd figures grow it from its own estimate: ${limit.limit}`);
    limit.stalled(5_000);
    assert.equal(limit.limit, 200, "never past maxLimit");
  });

  test("adaptive limit: what stalled(atLeast) lent goes back as the requests it held leave, and when work queues all but what the window held", () => {
    const clock = createManualClock();
    let queueing = false;
    const fresh = () => {
      const limit = createAdaptiveLimit({ initialLimit: 16, maxLimit: 1_000, queueing: () => queueing });
      limit.stalled(300); // 300 long polls held beside an idle core
      assert.equal(limit.limit, 317, "300 + √300");
      return limit;
    };
    // Each sample keeps room for the requests held within the last window or two (windowMs: 100)
    // and their allowance, no more.
    const leaving = fresh();
    leaving.sample(3_000, 299, (clock.advance(250), clock.now()));
    assert.equal(leaving.limit, 316, "299 held: 299 + √299");
    leaving.sample(3_000, 100, (clock.advance(50), clock.now()));
    assert.equal(leaving.limit, 316, "299 held 50 ms ago: long polls come back as soon as they are answered");
    leaving.sample(3_000, 100, (clock.advance(250), clock.now()));
    assert.equal(leaving.limit, 110, "100 held, and no more for 250 ms: 100 + √100");
    leaving.sample(3_000, 0, (clock.advance(250), clock.now()));
    assert.equal(leaving.limit, 20, "none held: where it would have been without them (16 + √16)");
    leaving.sample(3_000, 0, (clock.advance(250), clock.now()));
    assert.equal(leaving.limit, 20, "and no lower: only what was lent goes back");
    // No sample after the last of them was answered: asked as a permit is taken (quiet), the room
    // kept for their return goes back once none came for a window or two.
    const answered = fresh();
    answered.sample(3_000, 299, (clock.advance(250), clock.now()));
    answered.quiet!((clock.advance(50), clock.now()), 0);
    assert.equal(answered.limit, 316, "50 ms after: kept");
    answered.quiet!(NaN, 0);
    answered.quiet!(clock.now() + 1_000, NaN);
    answered.quiet!(clock.now() + 1_000, "0" as never);
    assert.equal(answered.limit, 316, "not a figure: nothing moves");
    assert.ok(answered.lent! > 0);
    answered.quiet!((clock.advance(200), clock.now()), 0);
    assert.equal(answered.limit, 20, "250 ms after, none held: given back");
    assert.equal(answered.lent, 0);
    // Polls that left unsampled (aborted): the next request's sample reports what is in flight.
    const aborted = fresh();
    aborted.sample(1, 3, (clock.advance(250), clock.now()));
    assert.equal(aborted.limit, 20);
    // Polls admitted over the limit (in slow start) are not among the permits a sample reports,
    // but they still hold permits: what is lent covers every permit held (a fresh process's short
    // requests beside them waited out their wait bound again and again when it did not).
    const over = fresh();
    over.sample(1, 3, clock.now(), 303);
    assert.equal(over.limit, 317, "303 still held: nothing given back");
    over.sample(1, 3, (clock.advance(250), clock.now()), 3);
    assert.equal(over.limit, 20, "3 held, and no more for 250 ms");
    // The windows that close while they are held do not grow it (the held requests count as used:
    // a review saw 32 → 317 → 709 in slow start, still 709 after the polls had gone), and once
    // they have gone it grows again from where it would have been.
    const learning = createAdaptiveLimit({ initialLimit: 16, maxLimit: 1_000, queueing: () => false });
    const windowOf = (limit: AdaptiveLimit, ms: number, inFlight: number) => {
      for (let i = 0; i < 10; i++) {
        clock.advance(12);
        limit.sample(ms, inFlight, clock.now());
      }
    };
    windowOf(learning, 20, 8);
    windowOf(learning, 20, 8);
    const base = learning.limit;
    learning.stalled(300);
    for (let w = 0; w < 5; w++) windowOf(learning, 20, 332);
    assert.equal(learning.limit, 350, "held: grown only as lent, to hold them (332 + √332), not learned");
    windowOf(learning, 20, 8);
    assert.equal(learning.limit, 350, "they left 120 ms ago: kept for their return");
    windowOf(learning, 20, 8);
    assert.ok(learning.limit <= base + Math.sqrt(base) + 1, `back near its level once they left: ${learning.limit} (was ${base})`);
    windowOf(learning, 20, learning.limit); // every permit used again: it grows, nothing left lent
    assert.ok(learning.limit > base + Math.sqrt(base), `grows again: ${learning.limit}`);
    // Work queues while they are held (a CPU storm): all of it back at the window, then the gradient.
    const storm = createAdaptiveLimit({ initialLimit: 16, maxLimit: 1_000, queueing: () => queueing });
    const window = (ms: number, inFlight: number) => {
      for (let i = 0; i < 10; i++) {
        clock.advance(15);
        storm.sample(ms, inFlight, clock.now());
      }
    };
    window(1, 16); // the baseline
    window(10, 16); // slower with nothing queued: slow start ends, the limit grows
    const settled = storm.limit;
    storm.stalled(300);
    assert.ok(storm.limit > 300);
    queueing = true;
    // A CPU storm meets the loan (1 ms of work each: n in flight take n ms): what the window held
    // is kept, the rest of the loan goes back, and the limit halves from there, a window at a
    // time while the storm lasts. (Taken back whole, the limit learned on a fast route that a
    // slow route joined went back to ~4 at the first burst the loan let in: a review's mix.)
    const lent = storm.limit;
    const fewer = 250;
    window(fewer, fewer);
    assert.ok(storm.limit <= fewer / 2 + 1 && storm.lent === 0, `kept what was in use (${fewer} of ${lent}), then halved: ${storm.limit}`);
    const storming: number[] = [];
    for (let w = 0; w < 5; w++) {
      const n = storm.limit;
      window(n, n);
      storming.push(storm.limit);
    }
    assert.ok(storm.limit < settled + Math.sqrt(settled), `halved a window while it lasts: ${storming.join(",")} (settled at ${settled})`);
  });

  test("adaptive limit: long work taken within a doubling limit (long polls) grows it only as lent, and once that work has gone the limit is back where short work had it", () => {
    // 32 short requests of 20 ms never go over tolerance: slow start stops at 128 only because
    // under half of it is used. Then 300 long polls: 96 fill the limit, the rest wait. A review
    // saw such polls double it to maxLimit (128 → 256 → 512 → 1,000), where it stayed.
    const clock = createManualClock();
    const limit = createAdaptiveLimit({ initialLimit: 64, maxLimit: 1_000, queueing: () => false });
    // One slow-start window (at least 50 ms here) of 20 ms samples.
    const windowOf = (inFlight: number, long: number) => {
      for (let i = 0; i < 5; i++) {
        clock.advance(12);
        limit.sample(20, inFlight, clock.now(), inFlight, long);
      }
    };
    for (let w = 0; w < 4; w++) windowOf(32, 0);
    assert.equal(limit.limit, 128, "slow start, stopped where under half of it is used");
    windowOf(128, 0); // the first 96 polls taken in this window: not long yet, they look like short work
    assert.equal(limit.limit, 256, "doubled for them (they cannot be told from short work yet)");
    windowOf(256, 96); // the next window: those 96 are long, and 128 more polls were taken
    assert.ok(limit.limit >= 332, `grows to hold them all, lent: ${limit.limit}`);
    for (let w = 0; w < 5; w++) windowOf(332, 300);
    const held = limit.limit;
    assert.ok(held >= 332 && held <= 332 + Math.sqrt(332) + 1, `while they are held: room for them and their allowance, no more: ${held}`);
    windowOf(32, 0); // they have gone, 60 ms ago: kept for their return (long polls come back at once)
    assert.equal(limit.limit, held, "kept while they may come back");
    for (let w = 0; w < 4; w++) windowOf(32, 0);
    assert.equal(limit.limit, 128, "back where the short work had it");
    // Without `long` (a caller that does not report it) the same windows double it as before.
    const blind = createAdaptiveLimit({ initialLimit: 64, maxLimit: 1_000, queueing: () => false });
    for (const inFlight of [32, 32, 32, 32, 128, 256, 332, 332, 332, 332, 332, 332, 32, 32, 32]) {
      for (let i = 0; i < 5; i++) {
        clock.advance(12);
        blind.sample(20, inFlight, clock.now());
      }
    }
    assert.equal(blind.limit, 1_000);
  });

  test("adaptive limit: a window twice as slow as tolerance allows, or slower, while work queues here halves the limit at once, as long as halving lowers the latency; otherwise it shrinks smoothed", () => {
    // A CPU storm that met a limit learned on slower work (128, on 20 ms I/O) shrank it 10 % a
    // window, smoothed: its admitted requests waited seconds (Node p99 2.1-3.7 s).
    const clock = createManualClock();
    const run = (queueing: (() => boolean) | undefined, windows: [number, number][]) => {
      const limit = createAdaptiveLimit({ initialLimit: 128, maxLimit: 128, queueing });
      const seen: number[] = [];
      for (const [ms, inFlight] of [[10, 128] as [number, number], ...windows]) {
        const before = limit.windows;
        for (let i = 0; i < 100 && limit.windows === before; i++) {
          clock.advance(12);
          limit.sample(ms, inFlight, clock.now());
        }
        seen.push(limit.limit);
      }
      return seen;
    };
    // The baseline (10 ms), then a storm whose latency falls as the limit halves; then a window
    // whose latency did not fall with half the concurrency (smoothed: 16 × 0.9); then one just
    // over tolerance (2 × the baseline: a gradient of 0.75 at weight 0.2).
    const storm: [number, number][] = [[80, 128], [50, 64], [35, 32], [78, 16], [20, 14]];
    assert.deepEqual(run(() => true, storm), [128, 64, 32, 16, 14, 13]);
    // Without a CPU reading a slower upstream reads the same: smoothed, as before.
    assert.deepEqual(run(undefined, storm), [128, 115, 103, 93, 83, 79]);
  });

  test("adaptive limit: while work held from before gives no sample (an upstream that hangs, long polls), a faster window lowers the baseline only by the share of its permits taken in it, from where it stood when that work began", () => {
    // A review: an upstream hung for 8 s and only a fast route's 0.1 ms requests completed; taken
    // as the baseline, every window after the recovery read 200 times slower.
    const clock = createManualClock();
    const limit = createAdaptiveLimit({ initialLimit: 256, queueing: () => false });
    const windowOf = windows(limit, clock);
    for (let w = 0; w < 5; w++) windowOf(20, 100, 0); // a mix of a 20 ms upstream and a fast route, under half the limit
    assert.deepEqual([limit.baselineMs, limit.limit], [20, 256]);
    // The upstream hangs for 8 s: 80 of its requests hold their permits (within the limit),
    // then 300 (past it); only the fast route completes, one at a time.
    for (let w = 0; w < 80; w++) windowOf(0.1, 81, 80);
    assert.ok(limit.baselineMs! > 19.5, `not the fast route's 0.1 ms, and not compounded window after window: ${limit.baselineMs}`);
    for (let w = 0; w < 20; w++) windowOf(0.1, 301, 300);
    assert.ok(limit.baselineMs! > 19.5, `${limit.baselineMs}`);
    // It answers again: no faster window, the baseline stays.
    const before = limit.baselineMs;
    for (let w = 0; w < 5; w++) windowOf(20, 100, 0);
    assert.equal(limit.baselineMs, before);
    // Long polls held beside short work (a third of the permits): a third of the way down to its 8 ms, however long they stay.
    for (let w = 0; w < 20; w++) windowOf(8, 60, 40);
    assert.ok(Math.abs(limit.baselineMs! - (before! + (8 - before!) / 3)) < 1e-9, `${limit.baselineMs}`);
    // Once a window holds no such work, its mean is the baseline at once.
    for (let w = 0; w < 3; w++) windowOf(5, 20, 0);
    assert.equal(limit.baselineMs, 5);
    // A latency of Infinity is not a sample (it made the baseline NaN for good).
    limit.sample(Infinity, 20, clock.now());
    for (let w = 0; w < 3; w++) windowOf(5, 20, 0);
    assert.equal(limit.baselineMs, 5);
  });

  test("adaptive limit: with long polls held throughout, an upstream that gets slower rebases the baseline up, and windows at the new latency do not lower it back toward the old one", () => {
    // A review: the level held work was measured from stayed at the old baseline after the
    // rebase, and every window at the new latency lowered it again (the limit down to 1).
    const clock = createManualClock();
    const limit = createAdaptiveLimit({ initialLimit: 64 });
    const baselines: number[] = [];
    for (let w = 0; w < 80; w++) {
      const latencyMs = w < 10 ? 20 : 100; // the short route's upstream slows at window 10
      const inFlight = Math.min(limit.limit, 30);
      for (let i = 0; i < 10; i++) {
        clock.advance(11 + Math.ceil(Math.max(100, 2 * (limit.baselineMs ?? 0)) / 10));
        limit.sample(latencyMs, inFlight, clock.now(), inFlight, Math.min(10, inFlight - 1)); // 10 long polls
      }
      baselines.push(limit.baselineMs!);
    }
    const rebased = baselines.indexOf(100);
    assert.ok(rebased > 10, `rebased at window ${rebased}`);
    assert.deepEqual(baselines.slice(rebased).filter((b) => b !== 100), [], "held at the new latency");
    assert.ok(limit.limit >= 10, `limit ${limit.limit}`);
  });

  test("adaptive limit: after an 8 s hang beside a fast route, a process whose work queues (CPU busy) keeps its limit when the upstream answers again", () => {
    const clock = createManualClock();
    const limit = createAdaptiveLimit({ initialLimit: 128, queueing: () => true });
    const windowOf = windows(limit, clock);
    for (let w = 0; w < 10; w++) windowOf(20, Math.min(100, limit.limit), 0);
    const was = limit.limit;
    for (let w = 0; w < 80; w++) windowOf(1, 90, 80); // 80 hung, the fast route 10 in flight at 1 ms
    const after: number[] = [];
    for (let w = 0; w < 20; w++) {
      windowOf(20, Math.min(100, limit.limit), 0);
      after.push(limit.limit);
    }
    assert.ok(Math.min(...after) >= was * 0.9, `limit ${was} before, after: ${after.join(",")}`);
  });

  test("adaptive limit: bad options throw naming the field", () => {
    assert.throws(() => createAdaptiveLimit({ minLimit: 0 }), /Cannot create adaptive limit as "minLimit" must be a positive integer: current value is 0/);
    assert.throws(() => createAdaptiveLimit({ minLimit: 10, maxLimit: 5 }), /"maxLimit" must be at least "minLimit" \(10\): current value is 5/);
    assert.throws(() => createAdaptiveLimit({ initialLimit: 2000 }), /"initialLimit" must be within \[1, 1000\]/);
    assert.throws(() => createAdaptiveLimit({ tolerance: 0.9 }), /"tolerance" must be a finite number of at least 1/);
    assert.throws(() => createAdaptiveLimit({ smoothing: 0 }), /"smoothing" must be a number in \(0, 1\]/);
    assert.throws(() => createAdaptiveLimit({ windowMs: 0 }), /"windowMs" must be a positive integer/);
    assert.throws(() => createAdaptiveLimit(7 as never), TypeError);
  });
});
