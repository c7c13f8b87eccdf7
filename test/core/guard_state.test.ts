// The process-wide gates' wiring: whether work queues in the process, as the adaptive limit reads
// it (the Host's CPU time against the wall clock, or the load monitor busy). A review found the
// adaptive limit refusing work that only waited — a 90 % fast / 10 % slow mix, long polls, a
// slower upstream — at a few percent of a core.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { _adaptiveOptions, _cpuSpare, _queueing } from "../../src/core/_guard_state.ts";
import { _cgroupCores, CGROUP_V1_CPU_PERIOD, CGROUP_V1_CPU_QUOTA, CGROUP_V2_CPU_MAX } from "../../src/core/host/cpu_quota.ts";
import { createHost } from "../../src/core/host/create_host.ts";
import { createLoadMonitor, type LoadMonitor } from "../../src/core/overload/load_monitor.ts";
import { createManualClock } from "../../src/testing/manual_clock.ts";
import { createAdaptiveLimit } from "../../src/core/overload/adaptive_limit.ts";
import { _createConcurrencyLimit, createConcurrencyLimit, type Permit } from "../../src/core/overload/concurrency_limit.ts";

describe("guard state", () => {
  test("guard state: work queues while the process used 70 % of a core or more since the last reading, or the load monitor is busy; a failed reading counts as queueing", () => {
    const clock = createManualClock();
    let cpu = 0;
    let busy = false;
    let failed = false;
    const load = { get busy() { return busy; } } as LoadMonitor;
    const queueing = _queueing(() => (failed ? undefined : cpu), clock, load);
    assert.equal(queueing(), true, "before any span was read: queueing, as without a reading");
    clock.advance(100);
    cpu += 95;
    assert.equal(queueing(), true, "95 ms of CPU in 100 ms");
    clock.advance(100);
    cpu += 30;
    assert.equal(queueing(), false, "30 ms in 100 ms: CPU to spare");
    clock.advance(90);
    cpu += 90;
    assert.equal(queueing(), false, "a span under 100 ms is not read: the last reading stands");
    busy = true;
    assert.equal(queueing(), true, "the load monitor busy");
    busy = false;
    clock.advance(100);
    failed = true;
    assert.equal(queueing(), true, "a failed reading says nothing: queueing");
    failed = false;
    clock.advance(100);
    cpu -= 1_000;
    assert.equal(queueing(), true, "a reading that went back says nothing: queueing");
    clock.advance(100);
    assert.equal(queueing(), false, "then 0 ms in 100 ms: CPU to spare");
    // A review: a storm's first reading after a minute idle spanned the minute and read as spare.
    clock.advance(60_000);
    cpu += 100;
    assert.equal(queueing(), true, "a share over more than a second is not read as spare");
  });

  test("guard state: under a CPU quota below a core, 70 % of the quota is queueing (a review: at 0.8 of a core an async CPU storm grew the limit to 1,000)", () => {
    const clock = createManualClock();
    let cpu = 0;
    const queueing = _queueing(() => cpu, clock, undefined, 0.5);
    clock.advance(100);
    cpu += 36;
    assert.equal(queueing(), true, "36 ms of CPU in 100 ms at half a core (70 % of it)");
    clock.advance(100);
    cpu += 30;
    assert.equal(queueing(), false, "30 ms: spare");
  });

  test("guard state: a CPU reading that throws is logged once and read as queueing; a quota the Host cannot read is a whole core", () => {
    const clock = createManualClock();
    const logs: string[] = [];
    let n = 0;
    const queueing = _queueing(() => {
      if (++n > 1) throw new Error("getrusage failed");
      return 0;
    }, clock, undefined, 1, (r) => void logs.push(r.msg));
    for (let i = 0; i < 3; i++) {
      clock.advance(100);
      assert.equal(queueing(), true);
    }
    assert.equal(logs.length, 1, logs.join("; "));
    const throwing = createHost({ cpuMs: () => 0, cpuCores: () => { throw new Error("no"); } });
    assert.equal(typeof _adaptiveOptions({}, throwing, clock, undefined).queueing, "function");
    assert.doesNotThrow(() => _adaptiveOptions({}, createHost({ cpuMs: () => { throw new Error("at once"); } }), clock, undefined, () => {}));
  });

  test("guard state: a cgroup's CPU quota read in cores (v2 cpu.max, v1 cfs quota / period); none, unlimited or unreadable is undefined", () => {
    const files = (map: Record<string, string>) => (path: string) => map[path];
    assert.equal(_cgroupCores(files({ [CGROUP_V2_CPU_MAX]: "50000 100000\n" })), 0.5);
    assert.equal(_cgroupCores(files({ [CGROUP_V2_CPU_MAX]: "max 100000\n" })), undefined);
    assert.equal(_cgroupCores(files({ [CGROUP_V2_CPU_MAX]: "150000 100000" })), 1.5);
    assert.equal(_cgroupCores(files({ [CGROUP_V1_CPU_QUOTA]: "80000\n", [CGROUP_V1_CPU_PERIOD]: "100000\n" })), 0.8);
    assert.equal(_cgroupCores(files({ [CGROUP_V1_CPU_QUOTA]: "-1\n", [CGROUP_V1_CPU_PERIOD]: "100000\n" })), undefined);
    assert.equal(_cgroupCores(files({ [CGROUP_V2_CPU_MAX]: "garbage" })), undefined);
    assert.equal(_cgroupCores(files({})), undefined);
  });

  test("guard state: CPU to spare (what lets the load gate pass a stall) is under 70 % of a core over a span of at least half a second; not known reads as none", () => {
    const clock = createManualClock();
    let cpu = 0;
    const spare = _cpuSpare(() => cpu, clock);
    assert.equal(spare(), false, "before the first span");
    clock.advance(50);
    cpu += 10;
    assert.equal(spare(), false, "50 ms is not yet a span");
    clock.advance(50);
    cpu += 10;
    assert.equal(spare(), true, "20 % over the first 100 ms: it stands in until a half-second reading");
    clock.advance(200);
    cpu += 90;
    assert.equal(spare(), true, "the first reading stands");
    clock.advance(300);
    cpu += 110;
    assert.equal(spare(), true, "40 % over 500 ms");
    // One 80 ms pause inside a span at 40 % does not read as a busy core; a span at 80 % does.
    clock.advance(500);
    cpu += 200 + 80;
    assert.equal(spare(), true, "56 %");
    clock.advance(100);
    cpu += 100;
    assert.equal(spare(), true, "the last span's reading stands until the next one is whole");
    clock.advance(400);
    cpu += 300;
    assert.equal(spare(), false, "80 % over the span");
    clock.advance(2_000);
    cpu += 10;
    assert.equal(spare(), false, "a span over a second (an idle spell before a storm) is not read as spare");
    clock.advance(100);
    cpu += 100;
    assert.equal(spare(), false, "a storm's first 100 ms stand in: a whole core");
    clock.advance(500);
    cpu += 100;
    assert.equal(spare(), true, "20 % over the next span");
    let failing = false;
    const fails = _cpuSpare(() => {
      if (failing) throw new Error("no reading");
      return undefined;
    }, clock);
    clock.advance(600);
    assert.equal(fails(), false, "no reading");
    clock.advance(600);
    assert.equal(fails(), false, "still none");
    failing = true;
    clock.advance(600);
    assert.equal(fails(), false, "a reading that throws");
    // With a quota of half a core, 70 % of it is 35 % of a core.
    let quota = 0;
    const half = _cpuSpare(() => quota, clock, 0.5);
    half();
    clock.advance(500);
    quota += 150;
    assert.equal(half(), true, "30 % of a core under a half-core quota");
    clock.advance(500);
    quota += 200;
    assert.equal(half(), false, "40 % of a core under a half-core quota");
  });

  test("guard state: the adaptive limit reads the Host's CPU time where it has one, unless the options give their own way to tell", () => {
    const clock = createManualClock();
    const host = (cpuMs?: () => number) => createHost(cpuMs === undefined ? {} : { cpuMs });
    assert.equal(typeof _adaptiveOptions({ tolerance: 2 }, host(() => 0), clock, undefined).queueing, "function");
    // Mostly idle (under half the CPU it may use): what admits a request at its wait bound.
    let cpu = 0;
    const withIdle = _adaptiveOptions({}, host(() => cpu), clock, undefined);
    clock.advance(100);
    cpu += 60;
    assert.deepEqual([withIdle.queueing!(), withIdle.idle!()], [false, false], "60 % of a core: not queueing, not idle");
    clock.advance(100);
    cpu += 20;
    assert.deepEqual([withIdle.queueing!(), withIdle.idle!()], [false, true], "20 %: idle");
    clock.advance(100);
    cpu += 95;
    assert.deepEqual([withIdle.queueing!(), withIdle.idle!()], [true, false], "95 %: queueing");
    assert.equal(_adaptiveOptions({ tolerance: 2 }, host(() => 0), clock, undefined).tolerance, 2);
    assert.equal(_adaptiveOptions({}, host(), clock, undefined).queueing, undefined, "a Host without a CPU reading");
    assert.equal(_adaptiveOptions({}, undefined, clock, undefined).queueing, undefined, "no Host (a serverless handler)");
    const own = () => false;
    assert.equal(_adaptiveOptions({ queueing: own }, host(() => 0), clock, undefined).queueing, own);
    assert.equal(createHost({ cpuMs: () => 5 }).cpuMs?.(), 5);
  });

  test("guard state: while requests arrive, the adaptive limit's CPU share is read at every probe, so a window closed by requests that took two seconds reads spare, not unknown; an idle spell still reads unknown", () => {
    // A review: an upstream browning out to 2 s closed a window every 2 s, each reading spanned
    // over a second, read as unknown (queueing): the limit halved on a nearly idle core.
    const clock = createManualClock();
    let cpu = 0;
    const load = createLoadMonitor({ clock });
    load.start();
    const options = _adaptiveOptions({}, createHost({ cpuMs: () => cpu }), clock, load);
    options.queueing!(); // a window closes: the reading's span starts here
    // 2.5 s of requests awaiting the upstream, one arriving every 20 ms, the core 5 % busy.
    for (let t = 0; t < 2_500; t += 10) {
      if (t % 20 === 0) load.admit(clock.now());
      clock.advance(10);
      cpu += 0.5;
    }
    assert.equal(options.queueing!(), false, "the share of the last span read at a probe: 5 %");
    // Then no request for 1.5 s (the probe stops a second after the last one, and the reading
    // is forgotten: read on at the quiet second's probes, the burst read the spell as spare).
    for (let t = 0; t < 1_500; t += 10) {
      clock.advance(10);
      cpu += 0.5;
    }
    assert.equal(load.running, false);
    load.admit(clock.now());
    assert.equal(options.queueing!(), true, "a span over an idle spell is unknown: read as queueing");
    load.dispose();
  });

  test("guard state: with no wait (shedWaitMs 0), a request that finds the adaptive limit full beside a mostly idle process is admitted over it, never past maxLimit and never a sample; beside a busy one, refused", () => {
    // A review: a fresh process's first 500 ms of 16 clients of a 20 ms route at a few percent of
    // a core were 280-790 503s with shedWaitMs 0 (the limit starts at 1), none with the wait.
    const clock = createManualClock();
    let cpu = 0;
    const adaptive = createAdaptiveLimit(_adaptiveOptions({ maxLimit: 8 }, createHost({ cpuMs: () => cpu }), clock, undefined));
    const limit = createConcurrencyLimit({ limit: adaptive, shedWaitMs: 0, clock });
    const take = (n: number) => Array.from({ length: n }, () => limit.tryAcquire(clock.now()));
    const reasons = (got: (Permit | { ok: false; reason: string })[]) => got.map((p) => (p.ok ? "ok" : p.reason));
    // Before the first 100 ms span the CPU share is not known: refused at the limit of 1.
    const first = take(3);
    assert.deepEqual(reasons(first), ["ok", "shed", "shed"]);
    clock.advance(100);
    cpu += 5;
    const idle = take(10);
    assert.deepEqual(reasons(idle), ["ok", "ok", "ok", "ok", "ok", "ok", "ok", "shed", "shed", "shed"], "5 % of a core: admitted over the limit up to maxLimit (8 in flight)");
    assert.equal(limit.inFlight, 8);
    assert.equal(limit.limit, 1, "the limit keeps its course");
    for (const p of idle) if (p.ok) p.complete();
    assert.equal(adaptive.baselineMs, undefined, "those admitted over the limit are not samples");
    (first[0] as Permit).complete();
    assert.equal(limit.inFlight, 0);
    clock.advance(100);
    cpu += 95;
    const busy = take(6);
    assert.equal(busy.filter((p) => p.ok).length, limit.limit, "95 % of a core: refused at the limit");
    assert.equal(reasons(busy).at(-1), "shed");
    for (const p of busy) if (p.ok) p.complete();
  });

  test("guard state: with no wait, what is admitted over the adaptive limit beside an idle process stays within maxLimit with parked permits counted", () => {
    // A review: parked permits (work waiting on its client for its body) were left out, and 4 were held at a maxLimit of 3.
    const clock = createManualClock();
    const limit = _createConcurrencyLimit({ limit: createAdaptiveLimit({ maxLimit: 3, idle: () => true, queueing: () => false }), shedWaitMs: 0, clock });
    const first = limit.tryAcquire(clock.now()) as Permit;
    assert.equal(limit._park(first), true);
    const got = [1, 2, 3].map(() => limit.tryAcquire(clock.now()));
    assert.deepEqual(got.map((p) => (p.ok ? "ok" : p.reason)), ["ok", "ok", "shed"]);
    assert.equal(limit.inFlight, 3);
    limit._unpark(first);
    first.complete();
    for (const p of got) if (p.ok) p.complete();
    assert.equal(limit.inFlight, 0);
  });

  test("guard state: a burst of long polls after a run of fast requests is admitted at its wait bound beside an idle core, not refused (the wait starts the CPU reading's span)", async () => {
    // A review: after fast traffic (windows within tolerance read no CPU) the reading at the
    // burst's wait bound spanned seconds, read as unknown, and 295 of 300 long polls were refused.
    const clock = createManualClock();
    let cpu = 0;
    const adaptive = createAdaptiveLimit(_adaptiveOptions({ initialLimit: 4 }, createHost({ cpuMs: () => cpu }), clock, undefined));
    const limit = createConcurrencyLimit({ limit: adaptive, shedWaitMs: 500, clock });
    // Three seconds of fast requests at 90 % of a core: four at a time, each 1 ms.
    for (let t = 0; t < 3_000; t += 2) {
      const permits = [0, 1, 2, 3].map(() => limit.tryAcquire(clock.now()));
      clock.advance(1);
      cpu += 1.8;
      for (const p of permits) if (p.ok) p.complete();
      clock.advance(1);
    }
    assert.equal(limit.inFlight, 0);
    const before = limit.limit;
    // Then 100 long polls at once, on a core nearly idle: 5 ms of CPU in their 500 ms wait.
    const polls = Array.from({ length: 100 }, () => limit.acquire(undefined, clock.now()));
    for (let t = 0; t < 500; t += 50) {
      clock.advance(50);
      cpu += 0.5;
    }
    const got = await Promise.all(polls);
    const refused = got.filter((p) => !p.ok).length;
    assert.equal(refused, 0, `refused ${refused} of 100 at a limit of ${before}`);
    assert.ok(before < 100, `the fast requests left the limit below the burst: ${before}`);
    // And the limit grew to hold them, with room beyond: a short request beside the polls held
    // is admitted at once, not after its whole wait bound (p50 522 ms for a 20 ms route before).
    assert.ok(limit.limit > 100, `the limit holds the polls: ${limit.limit}`);
    const short = limit.tryAcquire(clock.now());
    assert.ok(short.ok, "a short request beside the polls: admitted at once");
    short.complete();
    for (const p of got) (p as Permit).release();
    assert.equal(limit.inFlight, 0);
  });
});
