// The process-wide gates' wiring: whether work queues in the process, as the adaptive limit reads
// it (the Host's CPU time against the wall clock, or the load monitor busy). A review found the
// adaptive limit refusing work that only waited — a 90 % fast / 10 % slow mix, long polls, a
// slower upstream — at a few percent of a core.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { _adaptiveOptions, _queueing } from "../../src/core/_guard_state.ts";
import { createHost } from "../../src/core/host/create_host.ts";
import type { LoadMonitor } from "../../src/core/overload/load_monitor.ts";
import { createManualClock } from "../../src/testing/manual_clock.ts";

describe("guard state", () => {
  test("guard state: work queues while the process used 90 % of a core or more since the last reading, or the load monitor is busy; a failed reading counts as queueing", () => {
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
    clock.advance(20);
    cpu += 20;
    assert.equal(queueing(), false, "a span under 50 ms is not read: the last reading stands");
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
  });

  test("guard state: the adaptive limit reads the Host's CPU time where it has one, unless the options give their own way to tell", () => {
    const clock = createManualClock();
    const host = (cpuMs?: () => number) => createHost(cpuMs === undefined ? {} : { cpuMs });
    assert.equal(typeof _adaptiveOptions({ tolerance: 2 }, host(() => 0), clock, undefined).queueing, "function");
    assert.equal(_adaptiveOptions({ tolerance: 2 }, host(() => 0), clock, undefined).tolerance, 2);
    assert.equal(_adaptiveOptions({}, host(), clock, undefined).queueing, undefined, "a Host without a CPU reading");
    assert.equal(_adaptiveOptions({}, undefined, clock, undefined).queueing, undefined, "no Host (a serverless handler)");
    const own = () => false;
    assert.equal(_adaptiveOptions({ queueing: own }, host(() => 0), clock, undefined).queueing, own);
    assert.equal(createHost({ cpuMs: () => 5 }).cpuMs?.(), 5);
  });
});
