import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { _TurnQueue, TURN_SLICE_MS, type _TurnWaiter } from "../../../src/core/overload/_turn_queue.ts";
import { flushMicrotasks } from "../../support/flush.ts";
import { createTurnClock } from "../../support/turn_clock.ts";

/** A waiter that records how it ended, and burns `burnMs` of the clock when started. */
function waiter(log: string[], name: string, at: number, onStart: () => void = () => {}): _TurnWaiter {
  return {
    at,
    go(admit) {
      log.push(`${admit ? "start" : "refuse"} ${name}`);
      if (admit) onStart();
    },
  };
}

const always = () => true;

describe("turn queue", () => {
  test("turn queue: waiters start in the next turn, newest first, one slice a turn", async () => {
    const clock = createTurnClock();
    const queue = new _TurnQueue(clock, 500, 16, always);
    const log: string[] = [];
    const burn = () => void (clock.t += TURN_SLICE_MS * 0.4);
    for (const name of ["a", "b", "c", "d"]) assert.equal(queue.push(waiter(log, name, clock.t, burn)), true);
    assert.deepEqual(log, [], "nothing starts in the turn that queued them");
    assert.equal(clock.pendingImmediates, 1, "one slice is scheduled, not one per waiter");
    clock.runImmediates();
    await flushMicrotasks();
    // Each start burns 0.4 of a slice: the third start ends it, the fourth waits for the next turn.
    assert.deepEqual(log, ["start d", "start c", "start b"]);
    assert.equal(queue.length, 1);
    assert.equal(clock.runImmediates(), 1);
    await flushMicrotasks();
    assert.deepEqual(log, ["start d", "start c", "start b", "start a"]);
    assert.equal(queue.length, 0);
    assert.equal(clock.pendingImmediates, 0, "an empty queue schedules no more slices");
  });

  test("turn queue: past TURN_SLICE_MS a slice goes on only while every waiter left fits in the room at the cost per start so far", async () => {
    const clock = createTurnClock();
    let room = 25;
    const queue = new _TurnQueue(clock, 500, 64, always, () => room);
    const log: string[] = [];
    const burn = (ms: number) => () => void (clock.t += ms);
    // Cheap starts: 3 fill the slice, the 7 left fit in the room (1.2 + 7 x 0.4 ms): all 10 start.
    for (let i = 0; i < 10; i++) queue.push(waiter(log, `cheap${i}`, clock.t, burn(TURN_SLICE_MS * 0.4)));
    clock.runImmediates();
    await flushMicrotasks();
    assert.equal(log.length, 10, log.join());
    assert.equal(queue.length, 0);
    assert.equal(clock.pendingImmediates, 0);
    // 2 ms starts: 10 fit (2 + 9 x 2 = 20 ms of the 25), 20 do not (2 + 19 x 2 = 40): one start a slice.
    log.length = 0;
    for (let i = 0; i < 10; i++) queue.push(waiter(log, `ten${i}`, clock.t, burn(2)));
    clock.runImmediates();
    await flushMicrotasks();
    assert.equal(log.length, 10, "ten 2 ms starts fit in 25 ms");
    log.length = 0;
    for (let i = 0; i < 20; i++) queue.push(waiter(log, `twenty${i}`, clock.t, burn(2)));
    clock.runImmediates();
    await flushMicrotasks();
    assert.deepEqual(log, ["start twenty19"], "twenty do not: the slice stops at TURN_SLICE_MS");
    // The projection is read again after each start: the room shrinking ends the slice.
    queue.close(false);
    log.length = 0;
    const q2 = new _TurnQueue(clock, 500, 64, always, () => room);
    for (let i = 0; i < 10; i++) q2.push(waiter(log, `r${i}`, clock.t, () => void ((clock.t += TURN_SLICE_MS * 0.4), (room = log.length >= 4 ? 0 : 25))));
    clock.runImmediates();
    await flushMicrotasks();
    assert.equal(log.length, 4, "no room left (the monitor no longer reads normal): the slice ends");
    q2.close(false);
  });

  test("turn queue: a started waiter's synchronous work runs inside its start, before the next", async () => {
    const clock = createTurnClock();
    const queue = new _TurnQueue(clock, 500, 16, always);
    const log: string[] = [];
    queue.push(waiter(log, "old", clock.t));
    queue.push(waiter(log, "new", clock.t, () => log.push("new's handler")));
    clock.runImmediates();
    assert.deepEqual(log, ["start new", "new's handler"], "the first start and its work ran synchronously in the slice");
    await flushMicrotasks();
    assert.deepEqual(log, ["start new", "new's handler", "start old"]);
  });

  test("turn queue: the work a start sets off in microtasks counts against the slice", async () => {
    const clock = createTurnClock();
    const queue = new _TurnQueue(clock, 500, 16, always);
    const log: string[] = [];
    // An async handler settling: its cost lands a microtask after the start.
    const settleLater = () => queueMicrotask(() => void (clock.t += TURN_SLICE_MS * 2));
    queue.push(waiter(log, "a", clock.t, settleLater));
    queue.push(waiter(log, "b", clock.t, settleLater));
    clock.runImmediates();
    await flushMicrotasks();
    assert.deepEqual(log, ["start b"], "the slice saw b's microtask work and ended");
    clock.runImmediates();
    await flushMicrotasks();
    assert.deepEqual(log, ["start b", "start a"]);
  });

  test("turn queue: a waiter past the wait bound is refused, oldest first, before anything starts", async () => {
    const clock = createTurnClock();
    const queue = new _TurnQueue(clock, 100, 16, always);
    const log: string[] = [];
    queue.push(waiter(log, "oldest", clock.t - 150));
    queue.push(waiter(log, "old", clock.t - 100));
    queue.push(waiter(log, "fresh", clock.t - 99));
    clock.runImmediates();
    await flushMicrotasks();
    assert.deepEqual(log, ["refuse oldest", "refuse old", "start fresh"]);
    assert.equal(queue.length, 0);
  });

  test("turn queue: the length is bounded, and a closed queue starts everyone and takes no more", async () => {
    const clock = createTurnClock();
    const queue = new _TurnQueue(clock, 500, 2, always);
    const log: string[] = [];
    assert.equal(queue.push(waiter(log, "a", clock.t)), true);
    assert.equal(queue.push(waiter(log, "b", clock.t)), true);
    assert.equal(queue.push(waiter(log, "c", clock.t)), false, "past maxWaiting");
    assert.equal(queue.length, 2);
    queue.close(true);
    assert.deepEqual(log, ["start b", "start a"]);
    assert.equal(clock.pendingImmediates, 0, "the scheduled slice was cancelled");
    assert.equal(queue.push(waiter(log, "d", clock.t)), false);
    await flushMicrotasks();
    assert.deepEqual(log, ["start b", "start a"]);
  });

  test("turn queue: while the pace says no, nothing starts and no slice spins; wake() resumes", async () => {
    const clock = createTurnClock();
    let pace = false;
    const queue = new _TurnQueue(clock, 500, 16, () => pace);
    const log: string[] = [];
    queue.push(waiter(log, "a", clock.t));
    clock.runImmediates();
    await flushMicrotasks();
    assert.deepEqual(log, []);
    assert.equal(clock.pendingImmediates, 0, "held: no slice scheduled until woken");
    queue.push(waiter(log, "b", clock.t));
    assert.equal(clock.pendingImmediates, 0, "a new waiter does not schedule a slice while held");
    queue.wake();
    assert.equal(clock.pendingImmediates, 1);
    clock.runImmediates();
    await flushMicrotasks();
    assert.deepEqual(log, [], "woken, but the pace still says no");
    pace = true;
    queue.wake();
    clock.runImmediates();
    await flushMicrotasks();
    assert.deepEqual(log, ["start b", "start a"]);
  });

  test("turn queue: a held queue still refuses waiters past the wait bound when woken", async () => {
    const clock = createTurnClock();
    const queue = new _TurnQueue(clock, 100, 16, () => false);
    const log: string[] = [];
    queue.push(waiter(log, "a", clock.t));
    clock.runImmediates();
    await flushMicrotasks();
    clock.t += 100;
    queue.wake();
    clock.runImmediates();
    await flushMicrotasks();
    assert.deepEqual(log, ["refuse a"]);
    assert.equal(queue.length, 0);
  });

  test("turn queue: no timer while slices run; held, a timer still refuses each waiter whose wait is up, without a wake", async () => {
    const clock = createTurnClock();
    // The turn clock's timers never fire: these are recorded and fired by hand.
    const timers: { fn: () => void; at: number; live: boolean }[] = [];
    clock.setTimeout = (fn, ms) => {
      const entry = { fn, at: clock.t + ms, live: true };
      timers.push(entry);
      return { cancel: () => void (entry.live = false) };
    };
    const live = () => timers.filter((e) => e.live).length;
    const fireDue = () => {
      for (const e of [...timers]) {
        if (e.live && e.at <= clock.t) {
          e.live = false;
          e.fn();
        }
      }
    };
    let pace = true;
    const queue = new _TurnQueue(clock, 100, 16, () => pace);
    const log: string[] = [];
    pace = false;
    queue.push(waiter(log, "a", clock.t));
    assert.equal(live(), 0, "a slice is scheduled: it refuses what is due, no timer needed");
    clock.runImmediates();
    await flushMicrotasks();
    assert.equal(live(), 1, "held: one timer, for the oldest waiter");
    clock.t += 99;
    fireDue();
    assert.deepEqual(log, []);
    clock.t += 1;
    fireDue();
    assert.deepEqual(log, ["refuse a"], "refused at its wait bound, with no wake");
    assert.equal(queue.length, 0);
    queue.push(waiter(log, "b", clock.t));
    assert.equal(clock.pendingImmediates, 0, "still held: no slice");
    assert.equal(live(), 1, "a waiter that arrives while held gets the timer");
    clock.t += 100;
    fireDue();
    assert.deepEqual(log, ["refuse a", "refuse b"]);
    queue.push(waiter(log, "c", clock.t));
    pace = true;
    queue.wake();
    assert.equal(live(), 0, "woken: the timer goes, slices take over");
    clock.runImmediates();
    await flushMicrotasks();
    assert.deepEqual(log, ["refuse a", "refuse b", "start c"]);
  });
});
