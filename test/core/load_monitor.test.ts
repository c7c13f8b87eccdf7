import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { createLoadMonitor } from "../../src/core/load_monitor.ts";
import { createManualClock } from "../../src/core/manual_clock.ts";

describe("load monitor", () => {
  const started = (options = {}) => {
    const clock = createManualClock();
    const monitor = createLoadMonitor({ clock, highWatermarkMs: 40, lowWatermarkMs: 15, ...options });
    monitor.start();
    return { clock, monitor };
  };

  test("load monitor: samples hovering around the high watermark make one transition, not a flap", () => {
    const { monitor } = started();
    const states: boolean[] = [];
    for (const sample of [39, 41, 39, 41, 38, 42, 39, 40, 30, 20, 16]) {
      monitor.record(sample);
      states.push(monitor.busy);
    }
    const transitions = states.filter((s, i) => i > 0 && s !== states[i - 1]).length;
    assert.equal(transitions, 1);
    assert.equal(monitor.busy, true);
  });

  test("load monitor: samples hovering around the low watermark after busy make one transition", () => {
    const { monitor } = started();
    monitor.record(100);
    const states: boolean[] = [];
    for (const sample of [16, 15, 16, 14, 17, 30, 39]) {
      monitor.record(sample);
      states.push(monitor.busy);
    }
    assert.deepEqual(states, [true, false, false, false, false, false, false]);
  });

  test("load monitor: the probe measures timer drift on the clock", () => {
    const { clock, monitor } = started({ sampleIntervalMs: 10 });
    clock.advance(10);
    assert.equal(monitor.delayMs, 0);
    assert.equal(monitor.busy, false);
  });

  test("load monitor: a loop stalled right now refuses new work before the probe can run", () => {
    const { clock, monitor } = started({ sampleIntervalMs: 10 });
    const t0 = clock.now();
    assert.equal(monitor.admit(t0 + 5), true);
    // The probe is overdue by the high watermark: a synchronous batch is running.
    assert.equal(monitor.admit(t0 + 10 + 40), false);
    void clock;
  });

  test("load monitor: while busy the admitted share follows the measured delay, with a floor", () => {
    const { clock, monitor } = started({ minAdmitShare: 0.1 });
    monitor.record(60);
    const share1 = monitor.admitShare;
    assert.ok(share1 < 1 && share1 >= 0.1, `share ${share1}`);
    monitor.record(300);
    assert.ok(monitor.admitShare < share1);
    monitor.record(100_000);
    assert.equal(monitor.admitShare, 0.1);
    let admitted = 0;
    for (let i = 0; i < 1000; i++) if (monitor.admit(clock.now())) admitted++;
    assert.equal(admitted, 100, "deterministic: exactly the floor share of 1000");
  });

  test("load monitor: fails open — a monitor not running reads normal and admits", () => {
    const monitor = createLoadMonitor({ clock: createManualClock() });
    monitor.record(10_000);
    assert.equal(monitor.busy, false);
    assert.equal(monitor.admit(), true);
    assert.equal(monitor.shouldDefer(), false);
    monitor.start();
    assert.equal(monitor.busy, true);
    monitor.dispose();
    assert.equal(monitor.busy, false);
    assert.equal(monitor.admit(), true);
  });

  test("load monitor: shouldDefer follows the smoothed delay, not one spike", () => {
    const { monitor } = started({ smoothing: 0.2, deferAboveMs: 15 });
    monitor.record(50); // one spike: EWMA 10
    assert.equal(monitor.shouldDefer(), false);
    for (let i = 0; i < 10; i++) monitor.record(50);
    assert.equal(monitor.shouldDefer(), true);
    assert.ok(monitor.smoothedDelayMs > 15 && monitor.smoothedDelayMs < 50);
  });

  test("load monitor: the probe stops on dispose and never holds the clock", () => {
    const { clock, monitor } = started();
    assert.equal(clock.pendingTimers, 1);
    monitor.dispose();
    assert.equal(clock.pendingTimers, 0);
  });

  test("load monitor: bad watermarks throw naming the fields", () => {
    assert.throws(() => createLoadMonitor({ highWatermarkMs: 10, lowWatermarkMs: 10 }), /"lowWatermarkMs" must be below "highWatermarkMs": current values are 10 and 10/);
    assert.throws(() => createLoadMonitor({ minAdmitShare: 0 }), /"minAdmitShare" must be a number in \(0, 1\]: current value is 0/);
  });
});
