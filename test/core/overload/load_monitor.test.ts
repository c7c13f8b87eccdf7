import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { createLoadMonitor, type LoadMonitor, type LoadMonitorOptions, type LoadRefusal } from "../../../src/core/overload/load_monitor.ts";
import { createManualClock, type ManualClock } from "../../../src/testing/manual_clock.ts";
import type { Clock, TimerOptions } from "../../../src/core/clock.ts";

/** A manual clock that also records every interval the monitor schedules and every tick it runs. */
function countingClock(): { clock: Clock; manual: ManualClock; intervals: (TimerOptions | undefined)[]; ticks: () => number } {
  const manual = createManualClock();
  const intervals: (TimerOptions | undefined)[] = [];
  let ticks = 0;
  const clock: Clock = {
    now: () => manual.now(),
    setTimeout: (fn, ms, options) => manual.setTimeout(fn, ms, options),
    setInterval: (fn, ms, options) => {
      intervals.push(options);
      return manual.setInterval(() => (ticks++, fn()), ms, options);
    },
  };
  return { clock, manual, intervals, ticks: () => ticks };
}

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

  test("load monitor: a sample of exactly the high watermark turns it busy (README: at a sample ≥ 40 ms)", () => {
    const { monitor } = started();
    monitor.record(39.9);
    assert.equal(monitor.busy, false);
    monitor.record(40);
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

  test("load monitor: pace() holds work put off to a later turn only while the loop is stalled right now, not for the busy state or the share; onTurn listeners run at each probe", () => {
    const { clock, monitor } = started({ sampleIntervalMs: 10 });
    let turns = 0;
    const off = monitor.onTurn(() => void turns++);
    const t0 = clock.now();
    assert.equal(monitor.pace(t0 + 5), true);
    assert.equal(monitor.pace(t0 + 10 + 40), false, "the probe is overdue by the high watermark");
    clock.advance(10);
    assert.equal(turns, 1);
    monitor.record(500); // busy, the share at its floor
    assert.ok(monitor.busy && monitor.admitShare < 1);
    const now = clock.now();
    assert.equal(monitor.pace(now), true, "busy, but not stalled right now");
    assert.equal(monitor.pace(now), true, "and the share takes no credit from it");
    off();
    clock.advance(10);
    assert.equal(turns, 1, "a removed listener is not called");
    monitor.dispose();
    assert.equal(monitor.pace(now + 1_000), true, "not running: reads normal");
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

  test("load monitor: a steady delay between the watermarks holds the share where the delay says, even after a spike", () => {
    const { clock, monitor } = started();
    // From calm, without any spike: 30 ms steady is twice the low watermark.
    for (let i = 0; i < 200; i++) monitor.record(30);
    assert.ok(Math.abs(monitor.admitShare - 0.5) < 0.05, `steady 30 ms from calm: share ${monitor.admitShare}`);
    // A spike over the high watermark, then a steady delay between the watermarks (GC, CPU
    // steal, a noisy neighbour): the share settles where the delay says, it does not ratchet.
    monitor.record(100);
    for (const [steady, expected] of [[20, 0.75], [30, 0.5], [20, 0.75]] as const) {
      const shares: number[] = [];
      for (let i = 0; i < 300; i++) {
        monitor.record(steady);
        shares.push(monitor.admitShare);
      }
      for (const share of shares.slice(100)) {
        assert.ok(Math.abs(share - expected) < 0.05, `steady ${steady} ms: share ${share}, expected about ${expected}`);
      }
      let admitted = 0;
      for (let i = 0; i < 1000; i++) if (monitor.admit(clock.now())) admitted++;
      assert.ok(Math.abs(admitted - expected * 1000) <= 50, `steady ${steady} ms: ${admitted} of 1000 admitted`);
    }
    monitor.dispose();
  });

  test("load monitor: one good sample after a busy period does not restore the whole share; it climbs back over several samples", () => {
    const { monitor } = started({ recoveryStep: 0.1 });
    for (let i = 0; i < 20; i++) monitor.record(200);
    const floor = monitor.admitShare;
    assert.ok(floor < 0.1, `busy share ${floor}`);
    monitor.record(5);
    assert.ok(monitor.admitShare < 0.5, `one good sample restored the share to ${monitor.admitShare}`);
    let previous = monitor.admitShare;
    let samples = 1;
    while (monitor.admitShare < 1 && samples < 100) {
      monitor.record(5);
      samples++;
      assert.ok(monitor.admitShare >= previous, "the share only climbs while the loop is calm");
      assert.ok(monitor.admitShare - previous <= 0.1 + 1e-9, `a step of ${monitor.admitShare - previous}`);
      previous = monitor.admitShare;
    }
    assert.equal(monitor.admitShare, 1, "the share is back at 1 once the smoothed delay is below the low watermark");
    assert.ok(samples >= 10, `back at 1 after only ${samples} samples`);
    monitor.dispose();
  });

  test("load monitor: at normal load, below the low watermark, the share is 1 and nothing is refused", () => {
    const { clock, monitor } = started();
    const calm = [0, 3, 14, 1, 9, 15, 2, 12, 7, 0, 11, 15];
    let refused = 0;
    for (let i = 0; i < 600; i++) {
      monitor.record(calm[i % calm.length]!);
      assert.equal(monitor.admitShare, 1);
      for (let j = 0; j < 5; j++) if (!monitor.admit(clock.now())) refused++;
    }
    assert.equal(refused, 0);
    monitor.dispose();
  });

  test("load monitor: with no requests for the idle period the probe schedules no more timers and reads normal; the next request restarts it", () => {
    const { clock, manual, intervals, ticks } = countingClock();
    const monitor = createLoadMonitor({ clock, idleAfterMs: 1_000 });
    monitor.start();
    assert.equal(manual.pendingTimers, 1);
    manual.advance(500);
    assert.equal(monitor.admit(manual.now()), true, "a request at 500 ms");
    manual.advance(999);
    assert.equal(monitor.running, true, "999 ms after the last request is not yet idle");
    manual.advance(100);
    assert.equal(monitor.running, false, "idle: the probe stopped");
    assert.equal(manual.pendingTimers, 0, "no timer left while idle");
    const ticked = ticks();
    manual.advance(60_000);
    assert.equal(ticks(), ticked, "no wake-ups while idle");
    // Stopped reads normal (fails open), whatever it measured last.
    monitor.record(500);
    assert.equal(monitor.busy, false);
    assert.equal(monitor.shouldDefer(), false);
    assert.equal(monitor.admitShare, 1);
    // The next request is admitted and restarts the probe, measuring from now: the idle gap is no stall.
    assert.equal(monitor.admit(manual.now()), true);
    assert.equal(monitor.running, true);
    assert.equal(manual.pendingTimers, 1);
    manual.advance(10);
    assert.equal(monitor.delayMs, 0);
    assert.equal(monitor.busy, false);
    assert.equal(intervals.length, 2, "one interval per start");
    assert.ok(intervals.every((o) => o?.unref === true), "every probe timer is unref'd");
    monitor.dispose();
    assert.equal(manual.pendingTimers, 0);
    assert.equal(monitor.admit(manual.now()), true);
    assert.equal(monitor.running, false, "a disposed monitor is not restarted by a request");
  });

  test("load monitor: pace() counts as a request: while only put-off work starts, the probe keeps running; one stopped for idleness restarts there", () => {
    const { manual, clock } = countingClock();
    const monitor = createLoadMonitor({ clock, idleAfterMs: 1_000 });
    monitor.start();
    assert.equal(monitor.admit(manual.now()), true, "the last request admitted directly");
    // Every arrival now waits behind the ones waiting (the load gate): only their starts ask.
    for (let i = 0; i < 30; i++) {
      manual.advance(100);
      assert.equal(monitor.pace(manual.now()), true);
    }
    assert.equal(monitor.running, true, "3 s of starts: still measuring");
    manual.advance(1_100);
    assert.equal(monitor.running, false, "idle once nothing asks");
    assert.equal(monitor.pace(manual.now()), true);
    assert.equal(monitor.running, true, "a start restarted the probe");
    manual.advance(10);
    assert.equal(monitor.delayMs, 0, "measured from the restart: the idle gap is no stall");
    monitor.dispose();
    assert.equal(monitor.pace(manual.now()), true);
    assert.equal(monitor.running, false, "a disposed monitor is not restarted");
  });

  test("load monitor: a monitor whose share is still recovering keeps probing through a quiet period", () => {
    const { manual, clock } = countingClock();
    const monitor = createLoadMonitor({ clock, idleAfterMs: 10 });
    monitor.start();
    for (let i = 0; i < 10; i++) monitor.record(300);
    manual.advance(30);
    assert.equal(monitor.running, true, "stopped while the share was still below 1");
    manual.advance(2_000);
    assert.equal(monitor.admitShare, 1);
    assert.equal(monitor.running, false, "stopped once recovered and idle");
    assert.equal(manual.pendingTimers, 0);
  });

  test("load monitor: bad watermarks throw naming the fields", () => {
    assert.throws(() => createLoadMonitor({ highWatermarkMs: 10, lowWatermarkMs: 10 }), /"lowWatermarkMs" must be below "highWatermarkMs": current values are 10 and 10/);
    assert.throws(() => createLoadMonitor({ minAdmitShare: 0 }), /"minAdmitShare" must be a number in \(0, 1\]: current value is 0/);
    assert.throws(() => createLoadMonitor({ recoveryStep: 1.5 }), /"recoveryStep" must be a number in \(0, 1\]: current value is 1.5/);
    assert.throws(() => createLoadMonitor({ idleAfterMs: 0 }), /"idleAfterMs" must be a positive integer or Infinity: current value is 0/);
  });
});

/**
 * A clock for simulating an event loop turn by turn: time moves only by `at(t)`, and interval
 * timers run only when the test says the loop reached its timers phase (`timers()`) — late,
 * as a busy loop runs them, and rescheduled from then, as the runtimes do.
 */
function loopClock() {
  let t = 0;
  const timers: { fn: () => void; ms: number; next: number; every: boolean; live: boolean }[] = [];
  const add = (fn: () => void, ms: number, every: boolean) => {
    const timer = { fn, ms, next: t + ms, every, live: true };
    timers.push(timer);
    return { cancel: () => void (timer.live = false) };
  };
  const clock: Clock = {
    now: () => t,
    setTimeout: (fn, ms) => add(fn, ms, false),
    setInterval: (fn, ms) => add(fn, ms, true),
  };
  return {
    clock,
    get now() {
      return t;
    },
    at(ms: number) {
      t = ms;
    },
    /** The loop's timers phase at the current time: every due timer runs once. */
    timers() {
      for (const timer of timers.filter((x) => x.live && x.next <= t)) {
        if (timer.every) timer.next = t + timer.ms;
        else timer.live = false;
        timer.fn();
      }
    },
  };
}

type Sim = ReturnType<typeof loopClock>;

/**
 * One loop turn of `arrivals` requests, each asked of the monitor in turn: an admitted one
 * costs `admittedMs` of this turn (a synchronous handler burns it here), a refused one
 * `refusedMs`. Then `afterMs` of work that admits nothing (async handlers burning later).
 */
function turn(sim: Sim, monitor: LoadMonitor, arrivals: number, admittedMs: number, refusedMs: number, afterMs = 0) {
  sim.timers();
  const verdicts: ("admit" | LoadRefusal)[] = [];
  for (let i = 0; i < arrivals; i++) {
    const refusal = monitor.refusal(sim.now);
    verdicts.push(refusal ?? "admit");
    sim.at(sim.now + (refusal === undefined ? admittedMs : refusedMs));
  }
  sim.at(sim.now + afterMs);
  return { verdicts, admitted: verdicts.filter((v) => v === "admit").length };
}

describe("load monitor: loop turns", () => {
  const running = (options: LoadMonitorOptions = {}) => {
    const sim = loopClock();
    const monitor = createLoadMonitor({ clock: sim.clock, ...options });
    monitor.start();
    sim.at(10);
    return { sim, monitor };
  };

  test("load monitor: a synchronous turn keeps admitting only until its first admission is maxBatchMs old, then refuses the rest of the turn", () => {
    const { sim, monitor } = running({ maxBatchMs: 25 });
    assert.equal(monitor.maxBatchMs, 25);
    for (let t = 0; t < 40; t++) {
      // 256 waiting requests, a 2 ms synchronous handler: unbounded, one turn would run 512 ms.
      const { verdicts, admitted } = turn(sim, monitor, 256, 2, 0.05);
      assert.ok(admitted >= 1, `turn ${t}: nothing admitted`);
      const firstBatch = verdicts.indexOf("batch");
      assert.ok(firstBatch > 0, `turn ${t}: the batch bound never acted`);
      assert.ok(verdicts.slice(firstBatch).every((v) => v === "batch"), `turn ${t}: once over the bound, the rest of the turn is refused`);
      // What the turn admitted fits in the bound plus the one handler that crossed it.
      assert.ok(admitted * 2 <= 25 + 2, `turn ${t}: ${admitted} admitted, ${admitted * 2} ms of handlers`);
    }
    monitor.dispose();
  });

  test("load monitor: the batch bound defaults to the probe interval plus the low watermark, and Infinity turns it off", () => {
    assert.equal(createLoadMonitor({ clock: createManualClock() }).maxBatchMs, 25);
    assert.equal(createLoadMonitor({ clock: createManualClock(), sampleIntervalMs: 5, lowWatermarkMs: 10, highWatermarkMs: 30 }).maxBatchMs, 15);
    const { sim, monitor } = running({ maxBatchMs: Infinity });
    const { verdicts } = turn(sim, monitor, 40, 1, 0.05);
    assert.ok(!verdicts.includes("batch"));
    monitor.dispose();
  });

  test("load monitor: refusal() takes a shorter batch bound for one request, never a longer one", () => {
    const clock = createManualClock(1000);
    const monitor = createLoadMonitor({ clock, sampleIntervalMs: 600_000, minAdmitShare: 1, maxBatchMs: 20 });
    monitor.start();
    assert.equal(monitor.refusal(1000), undefined); // the turn's first admission
    assert.equal(monitor.refusal(1010, 10), undefined, "10 ms in: within a 10 ms bound");
    assert.equal(monitor.refusal(1011, 10), "batch");
    assert.equal(monitor.refusal(1015), undefined, "the monitor's own 20 ms bound");
    assert.equal(monitor.refusal(1021, 60), "batch", "a longer bound is the monitor's own");
    monitor.dispose();
  });

  test("load monitor: at normal load, with the probe late by at most the low watermark, the batch bound never refuses", () => {
    const { sim, monitor } = running();
    let refused = 0;
    let asked = 0;
    for (let i = 0; i < 600; i++) {
      const late = i % 16; // 0 … 15 ms: never past the low watermark
      sim.timers();
      const next = sim.now + 10 + late;
      // Requests all through the turn(s) until the probe runs again, up to just before it.
      for (let t = sim.now; t < next; t += 0.5) {
        sim.at(t);
        asked++;
        if (monitor.refusal(t) !== undefined) refused++;
      }
      sim.at(next);
    }
    assert.equal(refused, 0, `${refused} of ${asked} refused at normal load`);
    assert.equal(monitor.admitShare, 1);
    monitor.dispose();
  });

  test("load monitor: async handlers whose burst is bounded elsewhere (cheap admissions, the work a turn later) are never refused", () => {
    const { sim, monitor } = running();
    let refused = 0;
    for (let t = 0; t < 500; t++) {
      // 256 arrivals a turn pass the load gate at 50 µs each (the concurrency limit admits 4
      // of them and refuses or queues the rest), then the 4 admitted handlers burn 2 ms each.
      const { verdicts } = turn(sim, monitor, 256, 0.05, 0.05, 4 * 2);
      refused += verdicts.filter((v) => v !== "admit").length;
    }
    assert.equal(refused, 0);
    monitor.dispose();
  });

  test("load monitor: a probe overdue by idleAfterMs or more (a frozen process, thawed) is no delay: nothing after the thaw is refused; a shorter stall still is one", () => {
    const { sim, monitor } = running({ idleAfterMs: 1_000 });
    for (let t = 0; t < 5; t++) {
      sim.at(sim.now + 10);
      turn(sim, monitor, 5, 0.1, 0.01);
    }
    // Frozen for 5 s between two probes (SIGSTOP, a serverless freeze), then 20 arrivals.
    sim.at(sim.now + 5_000);
    const thawed = turn(sim, monitor, 20, 0.1, 0.01);
    assert.equal(thawed.admitted, 20, `after the thaw: ${thawed.verdicts.join(", ")}`);
    assert.equal(monitor.busy, false);
    assert.equal(monitor.admitShare, 1);
    sim.at(sim.now + 10);
    assert.equal(turn(sim, monitor, 20, 0.1, 0.01).admitted, 20, "and in the turns after it");
    // A loop blocked 500 ms (under idleAfterMs) is a stall, as before.
    sim.at(sim.now + 500);
    turn(sim, monitor, 1, 0.1, 0.01);
    assert.equal(monitor.busy, true);
    assert.ok(monitor.admitShare < 1);
    monitor.dispose();
    // A short idleAfterMs (a probe that sleeps sooner) does not hide stalls: a frozen process is
    // one overdue by at least a second.
    const short = running({ idleAfterMs: 100 });
    short.sim.at(short.sim.now + 10);
    turn(short.sim, short.monitor, 5, 0.1, 0.01);
    short.sim.at(short.sim.now + 300);
    turn(short.sim, short.monitor, 1, 0.1, 0.01);
    assert.equal(short.monitor.busy, true, "a 300 ms stall with idleAfterMs 100");
    short.monitor.dispose();
  });

  test("load monitor: after a stall the admitted share recovers turn by turn, never from the floor to everything at once", () => {
    const { sim, monitor } = running({ maxBatchMs: Infinity });
    monitor.record(500); // a 500 ms stall: the share drops to the floor
    assert.equal(monitor.admitShare, 0.05);
    const admittedPerTurn: number[] = [];
    const shares: number[] = [monitor.admitShare];
    for (let t = 0; t < 30; t++) {
      sim.at(sim.now + 10); // the probe runs on time: the loop is calm again
      admittedPerTurn.push(turn(sim, monitor, 100, 0.01, 0.01).admitted);
      shares.push(monitor.admitShare);
    }
    for (let i = 1; i < shares.length; i++) {
      assert.ok(shares[i]! - shares[i - 1]! <= 0.1 + 1e-9, `the share jumped from ${shares[i - 1]} to ${shares[i]}`);
    }
    for (let i = 1; i < admittedPerTurn.length; i++) {
      assert.ok(admittedPerTurn[i]! - admittedPerTurn[i - 1]! <= 11, `admissions per turn jumped: ${admittedPerTurn.join(", ")}`);
    }
    assert.ok(admittedPerTurn[0]! <= 16, `the first calm turn admitted ${admittedPerTurn[0]} of 100`);
    assert.equal(admittedPerTurn.at(-1), 100, "recovered in the end");
    monitor.dispose();
  });

  test("load monitor: a bad maxBatchMs throws naming the field", () => {
    assert.throws(() => createLoadMonitor({ maxBatchMs: 0 }), /Cannot create load monitor as "maxBatchMs" must be a positive integer or Infinity: current value is 0/);
    assert.throws(() => createLoadMonitor({ maxBatchMs: 2.5 }), RangeError);
  });
});
