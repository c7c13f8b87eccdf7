import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { type DrainOptions, type DrainOutcome, type InFlightWork, runUntilDrained } from "../../../src/core/lifecycle/drain.ts";
import { createShutdownController } from "../../../src/core/lifecycle/shutdown_controller.ts";
import { createConcurrencyLimit, type Permit } from "../../../src/core/overload/concurrency_limit.ts";
import { isServeError, type ServeError } from "../../../src/core/lifecycle/serve_error.ts";
import { createFakeHost } from "../../support/fake_host.ts";
import { createFakeServer, type FakeServerOptions } from "../../support/fake_server.ts";
import { flushMicrotasks } from "../../support/flush.ts";

const tick = () => flushMicrotasks(60);

/** A host, a controller on its signals, a fake server and real in-flight permits. */
function setup(serverOptions: FakeServerOptions = {}) {
  const fake = createFakeHost();
  const controller = createShutdownController({ host: fake.host });
  const server = createFakeServer(serverOptions);
  const limit = createConcurrencyLimit({ limit: 10 });
  const aborts: unknown[] = [];
  const work: InFlightWork = {
    get inFlight() {
      return limit.inFlight;
    },
    idle: () => limit.idle(),
    abortAll: (reason) => void aborts.push(reason),
  };
  const hold = () => limit.tryAcquire() as Permit;
  return { fake, clock: fake.clock, controller, server, limit, work, aborts, hold };
}

/** Starts the drain and tracks how it settled without awaiting it. */
function run(s: ReturnType<typeof setup>, options: DrainOptions = {}) {
  const state: { outcome?: DrainOutcome; error?: unknown; settledAt?: number } = {};
  const promise = runUntilDrained(s.server, s.controller, { work: s.work, ...options });
  promise.then(
    (outcome) => Object.assign(state, { outcome, settledAt: s.clock.now() }),
    (error) => Object.assign(state, { error, settledAt: s.clock.now() }),
  );
  return state;
}

describe("drain", () => {
  test("drain: a server that serves longer than the drain window before the signal still drains clean", async () => {
    const s = setup();
    const state = run(s, { drainTimeoutMs: 25_000 });
    await tick();
    assert.equal(s.clock.pendingTimers, 0, "no timer runs while serving");
    s.clock.advance(60_000);
    await tick();
    assert.equal(state.settledAt, undefined);
    assert.equal(s.server.stopAcceptingCalls, 0);
    const permit = s.hold();
    s.fake.signal("SIGTERM");
    await tick();
    assert.equal(s.server.stopAcceptingCalls, 1);
    s.clock.advance(1_000);
    permit.release();
    await tick();
    assert.deepEqual(state.outcome, {
      outcome: "clean",
      stillRunning: 0,
      reason: "SIGTERM",
      signalledAt: 60_000,
      drainedAt: 61_000,
      joinsPending: 0,
    });
    assert.equal(s.server.closeAllCalls, 0);
    assert.equal(s.clock.pendingTimers, 0, "the window timer was cancelled");
  });

  test("drain: in-flight work finishing inside the window is clean and never force-closed", async () => {
    const s = setup();
    const state = run(s);
    const a = s.hold();
    const b = s.hold();
    s.fake.signal("SIGTERM");
    await tick();
    s.clock.advance(10_000);
    a.release();
    await tick();
    assert.equal(state.settledAt, undefined, "one handler is still running");
    s.clock.advance(14_999);
    b.release();
    await tick();
    assert.equal(state.outcome?.outcome, "clean");
    assert.equal(state.settledAt, 24_999);
    assert.deepEqual(s.aborts, []);
    assert.equal(s.server.closeAllCalls, 0);
  });

  test("drain: work outliving the window (25 s by default, README's drainTimeoutMs) is forced at the window with the count still running", async () => {
    const s = setup();
    const state = run(s);
    s.hold();
    s.hold();
    s.fake.signal("SIGTERM");
    await tick();
    s.clock.advance(24_999);
    await tick();
    assert.equal(state.settledAt, undefined);
    s.clock.advance(1);
    await tick();
    assert.equal(state.outcome?.outcome, "forced");
    assert.equal(state.outcome?.stillRunning, 2);
    assert.equal(state.outcome?.drainedAt, 25_000);
    assert.equal(s.aborts.length, 1);
    assert.ok(s.aborts[0] instanceof DOMException);
    assert.deepEqual(s.server.calls, ["stopAccepting", "closeAll"]);
    assert.equal(s.fake.logs.filter((r) => r.msg.startsWith("drain window ran out")).length, 1);
  });

  test("drain: a stopAccepting that never settles (Deno) is bounded by the window, never awaited past it", async () => {
    const s = setup({ stop: "never" });
    const state = run(s, { drainTimeoutMs: 5_000 });
    s.hold();
    s.fake.signal("SIGTERM");
    await tick();
    s.clock.advance(5_000);
    await tick();
    assert.equal(state.outcome?.outcome, "forced");
    assert.equal(state.outcome?.stillRunning, 1);
    assert.equal(state.settledAt, 5_000);
    assert.equal(s.server.closeAllCalls, 1);
  });

  test("drain: with no work in flight a never-settling stopAccepting still ends at the window, force-closing the listener", async () => {
    const s = setup({ stop: "never" });
    const state = run(s, { drainTimeoutMs: 5_000 });
    s.fake.signal("SIGTERM");
    await tick();
    s.clock.advance(5_000);
    await tick();
    assert.equal(state.outcome?.outcome, "forced");
    assert.equal(state.outcome?.stillRunning, 0);
    assert.equal(s.server.closeAllCalls, 1);
  });

  test("drain: clean waits for both the listener to close and the work to go idle", async () => {
    const s = setup({ stop: "manual" });
    const state = run(s);
    const permit = s.hold();
    s.fake.signal("SIGTERM");
    await tick();
    permit.release();
    await tick();
    assert.equal(state.settledAt, undefined, "the listener has not closed yet");
    s.clock.advance(3_000);
    s.server.settleStop();
    await tick();
    assert.equal(state.outcome?.outcome, "clean");
    assert.equal(state.settledAt, 3_000);
  });

  test("drain: two signals — the second changes nothing and does not shorten the drain", async () => {
    const s = setup();
    const state = run(s, { drainTimeoutMs: 25_000 });
    const permit = s.hold();
    s.fake.signal("SIGTERM");
    await tick();
    s.clock.advance(10_000);
    s.fake.signal("SIGINT");
    await tick();
    assert.equal(s.controller.firedAt, 0);
    assert.equal(s.server.stopAcceptingCalls, 1);
    assert.deepEqual(s.fake.installed(), ["SIGTERM", "SIGINT"], "still caught: the process is not killed");
    s.clock.advance(14_999);
    await tick();
    assert.equal(state.settledAt, undefined, "the window still runs from the first signal");
    permit.release();
    await tick();
    assert.equal(state.outcome?.outcome, "clean");
    assert.equal(state.outcome?.reason, "SIGTERM");
    assert.equal(state.outcome?.signalledAt, 0);
  });

  test("drain: two signals with stuck work — forced exactly one window after the first", async () => {
    const s = setup();
    const state = run(s, { drainTimeoutMs: 25_000 });
    s.hold();
    s.fake.signal("SIGTERM");
    await tick();
    s.clock.advance(20_000);
    s.fake.signal("SIGTERM");
    await tick();
    s.clock.advance(4_999);
    await tick();
    assert.equal(state.settledAt, undefined);
    s.clock.advance(1);
    await tick();
    assert.equal(state.outcome?.outcome, "forced");
    assert.equal(state.settledAt, 25_000);
  });

  test("drain: onDrained runs last on a clean outcome", async () => {
    const s = setup();
    const order: string[] = [];
    const state = run(s, { onDrained: () => void order.push(`onDrained ${s.server.calls.join(",")}`) });
    s.fake.signal("SIGTERM");
    await tick();
    assert.equal(state.outcome?.outcome, "clean");
    assert.deepEqual(order, ["onDrained stopAccepting"]);
  });

  test("drain: onDrained runs last on a forced outcome, outside the window", async () => {
    const s = setup();
    let flushStartedAt: number | undefined;
    const state = run(s, {
      drainTimeoutMs: 1_000,
      onDrained: () => {
        flushStartedAt = s.clock.now();
        assert.deepEqual(s.server.calls, ["stopAccepting", "closeAll"]);
        return new Promise<void>((resolve) => s.clock.setTimeout(resolve, 5_000));
      },
    });
    s.hold();
    s.fake.signal("SIGTERM");
    await tick();
    s.clock.advance(1_000);
    await tick();
    assert.equal(flushStartedAt, 1_000);
    assert.equal(state.settledAt, undefined, "the flush is not cut off by the spent window");
    s.clock.advance(5_000);
    await tick();
    assert.equal(state.outcome?.outcome, "forced");
    assert.equal(state.settledAt, 6_000);
  });

  test("drain: an onDrained still running at flushTimeoutMs ends the drain with a flush ServeError carrying the outcome", async () => {
    const s = setup();
    const state = run(s, { drainTimeoutMs: 1_000, flushTimeoutMs: 2_000, onDrained: () => new Promise<void>(() => {}) });
    s.fake.signal("SIGTERM");
    await tick();
    s.clock.advance(1_999);
    await tick();
    assert.equal(state.error, undefined, "within its bound");
    s.clock.advance(1);
    await tick();
    assert.ok(isServeError(state.error));
    const error = state.error as ServeError;
    assert.equal(error.kind, "flush");
    assert.equal((error.cause as DOMException).name, "TimeoutError");
    assert.equal(error.outcome?.outcome, "clean");
  });

  test("drain: an onDrained rejection surfaces as a ServeError of kind flush carrying the cause and the outcome", async () => {
    const s = setup();
    const cause = new Error("exporter down");
    const state = run(s, { onDrained: () => Promise.reject(cause) });
    s.fake.signal("SIGTERM");
    await tick();
    assert.ok(isServeError(state.error));
    const error = state.error as ServeError;
    assert.equal(error.kind, "flush");
    assert.equal(error.code, "SERVE_FLUSH");
    assert.equal(error.cause, cause);
    assert.equal(error.outcome?.outcome, "clean");
  });

  test("drain: an onDrained that throws synchronously is a flush error too", async () => {
    const s = setup();
    const state = run(s, {
      onDrained: () => {
        throw new Error("sync flush");
      },
    });
    s.fake.signal("SIGTERM");
    await tick();
    assert.equal((state.error as ServeError).kind, "flush");
  });

  test("drain: a listener failure while serving rejects with a ServeError of kind io, nothing drained or flushed", async () => {
    const s = setup();
    let flushed = false;
    const state = run(s, { onDrained: () => void (flushed = true) });
    const cause = new Error("EADDRINUSE");
    s.clock.advance(100);
    s.server.fail(cause);
    await tick();
    assert.ok(isServeError(state.error));
    assert.equal((state.error as ServeError).kind, "io");
    assert.equal((state.error as ServeError).code, "SERVE_IO");
    assert.equal((state.error as ServeError).cause, cause);
    assert.equal(s.server.stopAcceptingCalls, 0);
    assert.equal(flushed, false);
  });

  test("drain: a listener failure with requests in flight waits for them (within the drain window) before it rejects: what was admitted is answered", async () => {
    const s = setup();
    const state = run(s, { drainTimeoutMs: 5_000 });
    const permit = s.hold();
    s.server.fail(new Error("Too many open files (os error 24)"));
    await tick();
    assert.equal(state.settledAt, undefined, "still answering what it admitted");
    assert.deepEqual(s.fake.logs.filter((r) => r.level === "error").map((r) => [r.msg, r.inFlight]), [["server failed; answering the requests in flight first", 1]], "said at once, not when the wait ends");
    s.clock.advance(1_000);
    permit.release();
    await tick();
    assert.equal(state.settledAt, undefined, "its answer is given a moment to go out");
    s.clock.advance(100);
    await tick();
    assert.ok(isServeError(state.error));
    assert.equal(state.settledAt, 1_100);
    // A request that never ends is waited for no longer than the window.
    const t = setup();
    const stuck = run(t, { drainTimeoutMs: 5_000 });
    t.hold();
    t.server.fail(new Error("EMFILE"));
    await tick();
    t.clock.advance(4_999);
    await tick();
    assert.equal(stuck.settledAt, undefined);
    t.clock.advance(1);
    await tick();
    assert.ok(isServeError(stuck.error));
    assert.equal(t.server.stopAcceptingCalls, 0);
  });

  test("drain: a server that ends on its own is clean without a signal, and the flush hook still runs", async () => {
    const s = setup();
    let flushed = false;
    const state = run(s, { onDrained: () => void (flushed = true) });
    s.clock.advance(42);
    s.server.end();
    await tick();
    assert.deepEqual(state.outcome, { outcome: "clean", stillRunning: 0, drainedAt: 42, joinsPending: 0 });
    assert.equal(flushed, true);
    assert.equal(s.server.stopAcceptingCalls, 0);
  });

  test("drain: a listener failure after the signal is logged and the drain carries on", async () => {
    const s = setup();
    const state = run(s);
    const permit = s.hold();
    s.fake.signal("SIGTERM");
    await tick();
    s.server.fail(new Error("late"));
    permit.release();
    await tick();
    assert.equal(state.outcome?.outcome, "clean");
    assert.equal(s.fake.logs.filter((r) => r.msg === "server failed while draining").length, 1);
  });

  test("drain: a stopAccepting that throws is logged and the drain still ends on the work", async () => {
    const s = setup();
    s.server.stopAccepting = () => {
      throw new Error("already closed");
    };
    const state = run(s);
    s.fake.signal("SIGTERM");
    await tick();
    assert.equal(state.outcome?.outcome, "clean");
    assert.equal(s.fake.logs.filter((r) => r.msg === "stop accepting failed").length, 1);
  });

  test("drain: joins after the drain get only what is left of the window since the signal", async () => {
    const s = setup();
    let flushedAt: number | undefined;
    const state = run(s, { drainTimeoutMs: 25_000, onDrained: () => void (flushedAt = s.clock.now()) });
    s.controller.join(new Promise(() => {})); // ignores the signal forever
    const permit = s.hold();
    s.fake.signal("SIGTERM");
    await tick();
    s.clock.advance(10_000);
    permit.release();
    await tick();
    assert.equal(state.settledAt, undefined, "the join is being waited for");
    s.clock.advance(14_999);
    await tick();
    assert.equal(state.settledAt, undefined);
    s.clock.advance(1);
    await tick();
    // elapsed (10 000) + join budget (15 000) = one window, not 10 000 + a fresh 25 000
    assert.equal(state.outcome?.drainedAt, 10_000);
    assert.equal(state.settledAt, 25_000);
    assert.equal(flushedAt, 25_000);
    assert.equal(state.outcome?.outcome, "clean");
    assert.equal(state.outcome?.joinsPending, 1);
    assert.deepEqual(s.fake.logs.filter((r) => r.level === "warn").map((r) => [r.msg, r.joinsPending]), [["drain window ran out with joined background tasks pending", 1]], "what an exit now loses is said");
  });

  test("drain: after a forced drain joins get no time at all", async () => {
    const s = setup();
    const state = run(s, { drainTimeoutMs: 2_000 });
    s.controller.join(new Promise(() => {}));
    s.hold();
    s.fake.signal("SIGTERM");
    await tick();
    s.clock.advance(2_000);
    await tick();
    assert.equal(state.settledAt, 2_000);
    assert.equal(state.outcome?.joinsPending, 1);
    assert.equal(s.clock.pendingTimers, 0);
  });

  test("drain: joins that stop on the signal inside the window are not reported pending", async () => {
    const s = setup();
    const state = run(s);
    s.controller.join((signal) => new Promise<void>((resolve) => signal.addEventListener("abort", () => s.clock.setTimeout(resolve, 3_000))));
    s.fake.signal("SIGTERM");
    await tick();
    s.clock.advance(3_000);
    await tick();
    assert.equal(state.outcome?.joinsPending, 0);
    assert.equal(state.settledAt, 3_000);
  });

  test("drain: a server that fails during the pre-stop delay, while it was still to serve, ends the drain with an io ServeError (the outcome kept); one failing after accepting stopped is logged only", async () => {
    const s = setup();
    const logs: string[] = [];
    const state = run(s, { drainTimeoutMs: 25_000, preStopDelayMs: 5_000, log: (r) => void logs.push(r.msg) });
    s.fake.signal("SIGTERM");
    await tick();
    s.clock.advance(1_000);
    s.server.fail(new Error("listener gone"));
    await tick();
    s.clock.advance(4_000);
    await tick();
    assert.ok(isServeError(state.error) && state.error.kind === "io", `a Deno listener gone mid-delay read as clean: ${String(state.error ?? state.outcome?.outcome)}`);
    assert.equal((state.error as ServeError).outcome?.outcome, "clean", "the requests' own outcome kept");
    assert.ok(logs.includes("server failed while draining"));
    const later = setup();
    const after = run(later, { drainTimeoutMs: 25_000 });
    const stop = later.server.stopAccepting.bind(later.server);
    later.server.stopAccepting = () => (later.server.fail(new Error("closed under the stop")), stop());
    later.fake.signal("SIGTERM");
    await tick();
    assert.equal(after.outcome?.outcome, "clean");
  });

  test("drain: the pre-stop delay keeps accepting for N ms and counts inside the window", async () => {
    const s = setup();
    const calls: string[] = [];
    const stop = s.server.stopAccepting.bind(s.server);
    s.server.stopAccepting = () => (calls.push("stopAccepting"), stop());
    const state = run(s, { drainTimeoutMs: 25_000, preStopDelayMs: 5_000, beforeStopAccepting: () => void calls.push("before") });
    s.hold();
    s.fake.signal("SIGTERM");
    await tick();
    s.clock.advance(4_999);
    await tick();
    assert.equal(s.server.stopAcceptingCalls, 0, "still accepting during the delay");
    assert.deepEqual(calls, [], "the guard keeps admitting during the delay");
    s.clock.advance(1);
    await tick();
    assert.equal(s.server.stopAcceptingCalls, 1);
    assert.deepEqual(calls, ["before", "stopAccepting"], "the guard starts refusing just before accepting stops");
    s.clock.advance(19_999);
    await tick();
    assert.equal(state.settledAt, undefined);
    s.clock.advance(1);
    await tick();
    assert.equal(state.outcome?.outcome, "forced", "forced at 25 s after the signal, not 30 s");
    assert.equal(state.settledAt, 25_000);
  });

  test("drain: a signal that fired before the drain started counts from when it fired", async () => {
    const s = setup();
    s.hold();
    s.fake.signal("SIGTERM");
    s.clock.advance(20_000);
    const state = run(s, { drainTimeoutMs: 25_000 });
    await tick();
    s.clock.advance(5_000);
    await tick();
    assert.equal(state.outcome?.outcome, "forced");
    assert.equal(state.settledAt, 25_000);
  });

  test("drain: without work it waits for the listener only", async () => {
    const s = setup({ stop: "manual" });
    const promise = runUntilDrained(s.server, s.controller);
    s.hold(); // not visible to the drain
    s.controller.shutdown("manual stop");
    await tick();
    s.clock.advance(100);
    s.server.settleStop();
    const outcome = await promise;
    assert.equal(outcome.outcome, "clean");
    assert.equal(outcome.reason, "manual stop");
  });

  test("drain: an infinite window (drainTimeoutMs: Infinity) waits for the work however long it takes", async () => {
    const s = setup();
    const state = run(s, { drainTimeoutMs: Infinity });
    const permit = s.hold();
    s.fake.signal("SIGTERM");
    await tick();
    assert.equal(s.clock.pendingTimers, 0, "no window timer");
    s.clock.advance(10 * 60_000);
    await tick();
    assert.equal(state.settledAt, undefined);
    permit.release();
    await tick();
    assert.equal(state.outcome?.outcome, "clean");
    assert.equal(s.server.closeAllCalls, 0);
  });

  test("drain: bad options throw at once", () => {
    const s = setup();
    assert.throws(
      () => runUntilDrained(s.server, s.controller, { drainTimeoutMs: 25_000, preStopDelayMs: 30_000 }),
      {
        name: "RangeError",
        message:
          'Cannot run until drained as "preStopDelayMs" must be below "drainTimeoutMs": current values are 30000 and 25000',
      },
    );
    assert.throws(() => runUntilDrained(s.server, s.controller, { drainTimeoutMs: 25_000, preStopDelayMs: 25_000 }), /"preStopDelayMs" must be below "drainTimeoutMs"/);
    assert.throws(() => runUntilDrained(s.server, s.controller, { drainTimeoutMs: 0 }), /"drainTimeoutMs" must be a positive integer/);
    assert.throws(() => runUntilDrained(s.server, s.controller, { preStopDelayMs: -1 }), RangeError);
    assert.throws(() => runUntilDrained(s.server, s.controller, { onDrained: "flush" as never }), TypeError);
    assert.equal(s.server.stopAcceptingCalls, 0);
  });
});
