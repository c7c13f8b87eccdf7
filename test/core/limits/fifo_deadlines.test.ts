// The rate store's shared timeout (one timer for every outstanding call), driven by the
// manual clock: each deadline fires at its own time, ended ones are dropped as new ones come
// (the queue holds about the calls outstanding, not every call of the last timeout), and a
// deadline added from a firing callback is neither late nor given a second timer.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { _FifoDeadlines } from "../../../src/core/limits/_fifo_deadlines.ts";
import { createManualClock } from "../../../src/testing/manual_clock.ts";

describe("fifo deadlines", () => {
  // The clocks review: a loop blocked (or a process paused) past a deadline runs its timer
  // before the answers waiting unread in their sockets; the calls get one more turn first.
  test("fifo deadlines: a timer that ran late gives the calls due one more turn (10 ms) before they end, each once; one on time ends them at once", () => {
    const clock = createManualClock();
    // A stall: the time read moves on by `stall` while no timer runs (so the next one runs late).
    let stalled = 0;
    const stall = (ms: number) => void (stalled += ms);
    const late = { now: () => clock.now() + stalled, setTimeout: clock.setTimeout, setInterval: clock.setInterval };
    const d = new _FifoDeadlines(late, 50);
    const fired: string[] = [];
    const answered = d.add(() => fired.push("answered"));
    d.add(() => fired.push("silent"));
    stall(70);
    clock.advance(50);
    assert.deepEqual(fired.slice(), [], "the timer ran 70 ms late: one more turn first");
    answered.cancel(); // its answer was read in that turn
    clock.advance(9);
    assert.deepEqual(fired.slice(), []);
    clock.advance(1);
    assert.deepEqual(fired, ["silent"], "the call still unanswered ends after the turn");
    d.add(() => fired.push("on time"));
    clock.advance(50);
    assert.deepEqual(fired, ["silent", "on time"], "no turn for a timer on time");
    // A call made during a turn, the loop stalled again past its deadline: it gets a turn of
    // its own (a review of the first form, which gave one turn a firing: that call timed out).
    d.add(() => fired.push("first"));
    stall(70);
    clock.advance(50);
    assert.deepEqual(fired, ["silent", "on time"]);
    const second = d.add(() => fired.push("second"));
    clock.advance(10);
    assert.deepEqual(fired, ["silent", "on time", "first"], "the first call ends after its turn");
    stall(90);
    clock.advance(40);
    assert.deepEqual(fired, ["silent", "on time", "first"], "the second call's timer ran late: its own turn");
    second.cancel();
    clock.advance(10);
    assert.deepEqual(fired, ["silent", "on time", "first"], "answered in its turn");
    assert.equal(clock.pendingTimers, 0);
  });

  test("fifo deadlines: each fires at its own time under one timer; a cancelled one never fires", () => {
    const clock = createManualClock();
    const d = new _FifoDeadlines(clock, 50);
    const fired: string[] = [];
    d.add(() => fired.push("a@0"));
    clock.advance(10);
    const b = d.add(() => fired.push("b@10"));
    clock.advance(10);
    d.add(() => fired.push("c@20"));
    assert.equal(clock.pendingTimers, 1);
    b.cancel();
    for (const to of [49, 50, 60, 69, 70]) {
      clock.advance(to - clock.now());
      fired.push(`t${to}`);
    }
    assert.deepEqual(fired, ["t49", "a@0", "t50", "t60", "t69", "c@20", "t70"]);
    assert.equal(clock.pendingTimers, 0, "no timer once nothing is live");
    assert.equal(d.held, 0);
  });

  test("fifo deadlines: calls that end in order are dropped as new ones come, whatever the timeout", () => {
    const clock = createManualClock();
    const d = new _FifoDeadlines(clock, 1000);
    // 64 in flight, each ending before the next is made (a pipelined client), 10,000 calls
    // within one timeout: the queue stays at about the calls outstanding.
    const inFlight = [];
    let most = 0;
    for (let i = 0; i < 10_000; i++) {
      if (inFlight.length === 64) inFlight.shift()!.cancel();
      inFlight.push(d.add(() => assert.fail("an ended call's deadline fired")));
      most = Math.max(most, d.held);
      if (i % 100 === 0) clock.advance(1);
    }
    assert.ok(most <= 65, `held at most ${most} deadlines, not one per call of the last timeout`);
    for (const c of inFlight) c.cancel();
    clock.advance(1000);
    assert.equal(d.held, 0);
    assert.equal(clock.pendingTimers, 0);
  });

  test("fifo deadlines: one ended out of order waits behind a live one, and is dropped with it", () => {
    const clock = createManualClock();
    const d = new _FifoDeadlines(clock, 50);
    let fired = 0;
    const first = d.add(() => fired++);
    const second = d.add(() => assert.fail("cancelled"));
    second.cancel();
    assert.equal(d.held, 2, "behind the live first one");
    first.cancel();
    d.add(() => fired++);
    assert.equal(d.held, 1, "both dropped as the next is added");
    clock.advance(50);
    assert.equal(fired, 1);
  });

  test("fifo deadlines: a deadline added by a firing callback fires on time, with one timer, and older live ones are not delayed", () => {
    const clock = createManualClock();
    const d = new _FifoDeadlines(clock, 50);
    const fired: string[] = [];
    // a@0 fires at 50 and adds x; b (added at 10) must still fire at 60, x at 100.
    d.add(() => {
      fired.push(`a@${clock.now()}`);
      d.add(() => fired.push(`x@${clock.now()}`));
    });
    clock.advance(10);
    d.add(() => fired.push(`b@${clock.now()}`));
    clock.advance(40);
    assert.equal(clock.pendingTimers, 1, "one timer after the callback added a deadline");
    clock.advance(10);
    clock.advance(40);
    assert.deepEqual(fired, ["a@50", "b@60", "x@100"]);
    assert.equal(clock.pendingTimers, 0);
  });
});
