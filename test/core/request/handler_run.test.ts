// Gate 10, the handler (src/core/request/handler_run.ts), driven directly with the manual clock:
// one answer a request (the handler's, a 413, a 500, or the 408 of its deadline), what the
// request holds released once when the handler settles — as a latency sample only after a
// normal answer —, and the running handlers listed until then.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { _handlerRun } from "../../../src/core/request/handler_run.ts";
import { _Admission, type _AdmissionHost } from "../../../src/core/request/admission.ts";
import { _createLongLived } from "../../../src/core/request/_long_lived.ts";
import { createCleanupRegistry } from "../../../src/core/request/cleanup_registry.ts";
import { BodyTooLargeError } from "../../../src/core/request/body_limit.ts";
import type { GateRefusal } from "../../../src/core/gates/gate.ts";
import type { DenyLayer, HygieneEvent } from "../../../src/core/events.ts";
import { createManualClock } from "../../../src/testing/manual_clock.ts";
import { flushMicrotasks } from "../../support/flush.ts";

/** A slot or permit: how it was given back, counted. */
function held() {
  const given = { completed: 0, disposed: 0 };
  return { given, thing: { complete: () => void given.completed++, [Symbol.dispose]: () => void given.disposed++ } };
}

function setup() {
  const clock = createManualClock();
  const refused: { layer: DenyLayer; status: number }[] = [];
  const errors: unknown[] = [];
  const events: HygieneEvent[] = [];
  const longLived = _createLongLived(undefined, clock);
  const run = _handlerRun({
    clock,
    requestTimeoutMs: 1000,
    longLived,
    refuse: (layer: DenyLayer, r: GateRefusal) => {
      refused.push({ layer, status: r.status });
      return new Response(null, { status: r.status });
    },
    onError: (error) => void errors.push(error),
    onEvent: (event) => void events.push(event),
  });
  const host: _AdmissionHost = {
    forcedDrains: 0,
    scheduleDeadline: (ms, _now, a) => clock.setTimeout(() => run.onDeadline(a), ms),
    now: () => clock.now(),
    validateTimeout: (ms) => ms,
    newCleanups: () => createCleanupRegistry(() => {}),
    watchShutdown: () => {},
    report: () => {},
    computeKey: () => {},
  };
  const admit = (request = new Request("http://localhost/")) => {
    const a = new _Admission(host, request, undefined, clock.now(), 1000);
    const h = held();
    a.hold(h.thing);
    return { a, given: h.given };
  };
  return { clock, run, refused, errors, events, admit };
}

describe("handler run", () => {
  test("a Response returned synchronously is the answer at once; what the request held is given back as a latency sample", () => {
    const { run, admit, events } = setup();
    const { a, given } = admit();
    const answer = run.run(() => new Response("ok"), a, false);
    assert.ok(answer instanceof Response, "no promise for a synchronous answer");
    assert.equal(answer.status, 200);
    assert.deepEqual(given, { completed: 1, disposed: 0 });
    assert.equal(a.settled, true);
    assert.deepEqual(run.running(), [], "a synchronous handler is never listed as running");
    assert.deepEqual(events.map((e) => e.type === "request" && [e.status, e.outcome]), [[200, "ok"]]);
    run.dispose();
  });

  test("a handler that throws, or resolves to something not a Response, is answered 500 and logged; what it held is given back, not as a sample", async () => {
    const { run, admit, errors, events } = setup();
    const boom = new Error("boom");
    const first = admit();
    const thrown = run.run(() => {
      throw boom;
    }, first.a, false);
    assert.equal((thrown as Response).status, 500);
    assert.deepEqual(first.given, { completed: 0, disposed: 1 });
    const second = admit();
    const wrong = run.run(() => Promise.resolve("not a response" as unknown as Response), second.a, false);
    assert.equal((await wrong).status, 500);
    assert.deepEqual(second.given, { completed: 0, disposed: 1 });
    assert.equal(errors[0], boom);
    assert.ok(errors[1] instanceof TypeError);
    assert.deepEqual(events.map((e) => e.type === "request" && [e.status, e.outcome]), [[500, "error"], [500, "error"]]);
    run.dispose();
  });

  test("an asynchronous handler is listed as running until it settles, then answered with its Response", async () => {
    const { run, admit } = setup();
    const { a, given } = admit();
    let finish!: (res: Response) => void;
    const answer = run.run(() => new Promise<Response>((resolve) => (finish = resolve)), a, false);
    assert.ok(answer instanceof Promise);
    assert.deepEqual(run.running(), [a]);
    await flushMicrotasks();
    assert.deepEqual(given, { completed: 0, disposed: 0 }, "held while the handler runs");
    finish(new Response("late", { status: 201 }));
    assert.equal((await answer).status, 201);
    assert.deepEqual(given, { completed: 1, disposed: 0 });
    assert.deepEqual(run.running(), []);
    run.dispose();
  });

  test("the deadline answers 408 while the handler runs: its signal aborts, it is a straggler until it settles, and its late answer is dropped", async () => {
    const { clock, run, admit, refused, events } = setup();
    const { a, given } = admit();
    const signal = a.signal;
    let finish!: (res: Response) => void;
    let cancelled = false;
    const lateBody = new ReadableStream<Uint8Array>({ cancel: () => void (cancelled = true) });
    a.timed = true; // the deadline gate's mark: armed once the handler turns asynchronous
    const answer = run.run(() => new Promise<Response>((resolve) => (finish = resolve)), a, false);
    clock.advance(1000); // the arming tick armed it from its arrival; the deadline fires at 1000 ms
    await flushMicrotasks();
    assert.equal((await answer).status, 408);
    assert.deepEqual(refused, [{ layer: "timeout", status: 408 }]);
    assert.equal(signal.aborted, true);
    assert.equal((signal.reason as DOMException).name, "TimeoutError");
    assert.equal(run.stragglers, 1);
    assert.deepEqual(given, { completed: 0, disposed: 0 }, "a 408 does not give back what the handler still uses");
    finish(new Response(lateBody));
    await flushMicrotasks();
    assert.equal(run.stragglers, 0);
    assert.deepEqual(given, { completed: 0, disposed: 1 }, "given back at settle, not as a sample: it was abandoned");
    assert.equal(cancelled, true, "nobody reads the late answer's body: cancelled");
    assert.deepEqual(events.map((e) => e.type === "request" && [e.status, e.outcome]), [[408, "timeout"]]);
    run.dispose();
  });

  test("a request whose body passed its cap is answered 413 whatever the handler says, and reported as the 413 sent", () => {
    const { run, admit, refused, events } = setup();
    const { a, given } = admit();
    a.overflowed = true;
    const answer = run.run(() => new Response("ignored"), a, false);
    assert.equal((answer as Response).status, 413);
    assert.deepEqual(refused, [{ layer: "body", status: 413 }]);
    assert.deepEqual(given, { completed: 1, disposed: 0 });
    assert.deepEqual(events.map((e) => e.type === "request" && [e.status, e.outcome]), [[413, "ok"]]);
    run.dispose();
  });

  test("a handler that failed reading a body past its cap is answered 413 and reported as the 413, not as a handler error", async () => {
    const { run, admit, errors, events } = setup();
    const { a } = admit();
    const answer = run.run(() => Promise.reject(new BodyTooLargeError(10)), a, false);
    assert.equal((await answer).status, 413);
    assert.deepEqual(errors, [], "not logged as the handler's failure");
    assert.deepEqual(events.map((e) => e.type === "request" && [e.status, e.outcome]), [[413, "ok"]]);
    run.dispose();
  });

  test("after a 408, the handler's late result makes no answer: no refusal is reported for it, whatever it is", async () => {
    const { clock, run, admit, refused, events, errors } = setup();
    const settleWith: ((finish: { resolve: (res: Response) => void; reject: (e: unknown) => void }) => void)[] = [
      // its body passed the cap meanwhile: no 413 is made (nor reported) for a request answered 408
      ({ resolve }) => resolve(new Response("late")),
      ({ reject }) => reject(new Error("aborted by the deadline")),
      ({ resolve }) => resolve("not a Response" as unknown as Response),
    ];
    for (const settle of settleWith) {
      const { a, given } = admit();
      let finish!: { resolve: (res: Response) => void; reject: (e: unknown) => void };
      a.timed = true;
      const answer = run.run(() => new Promise<Response>((resolve, reject) => (finish = { resolve, reject })), a, false);
      clock.advance(1000);
      await flushMicrotasks();
      assert.equal((await answer).status, 408);
      a.overflowed = true;
      settle(finish);
      await flushMicrotasks();
      assert.deepEqual(given, { completed: 0, disposed: 1 });
    }
    assert.deepEqual(refused, [{ layer: "timeout", status: 408 }, { layer: "timeout", status: 408 }, { layer: "timeout", status: 408 }]);
    assert.deepEqual(events.map((e) => e.type === "request" && [e.status, e.outcome]), [[408, "timeout"], [408, "timeout"], [408, "timeout"]]);
    assert.equal(errors.length, 1, "a rejection after the 408 is the expected reaction to the signal; a value not a Response is logged");
    assert.ok(errors[0] instanceof TypeError);
    run.dispose();
  });

  test("a client that left before any answer is reported as aborted, not as a server error — the handler failed with its abort, or answered after it (a framework's onError 500 too); nothing is logged", async () => {
    const { run, admit, errors, events } = setup();
    const answers: (number | undefined)[] = [];
    const settleWith: ((signal: AbortSignal) => Promise<Response>)[] = [
      // a route that follows its signal: the wait rejects with the abort
      (signal) => new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason))),
      // a framework's error handler turned that rejection into a 500 answer
      (signal) => new Promise((resolve) => signal.addEventListener("abort", () => resolve(new Response(null, { status: 500 })))),
      // a route that answered anyway, after the client had left
      (signal) => new Promise((resolve) => signal.addEventListener("abort", () => resolve(new Response("late")))),
    ];
    for (const settle of settleWith) {
      const client = new AbortController();
      const { a, given } = admit(new Request("http://localhost/", { signal: client.signal }));
      const answer = run.run((_req, info) => settle(info.context.signal), a, false);
      client.abort(new DOMException("gone", "AbortError"));
      answers.push((await answer).status);
      assert.deepEqual(given, { completed: 0, disposed: 1 }, "given back, not as a latency sample");
    }
    assert.deepEqual(answers, [500, 500, 200]);
    assert.deepEqual(errors, []);
    assert.deepEqual(events.map((e) => e.type === "request" && [e.status, e.outcome]), [[500, "aborted"], [500, "aborted"], [200, "aborted"]]);
    // A failure of the handler's own is still an error, client gone or not (watched or not); so
    // is a 500 it made with its client still there.
    const watched = new AbortController();
    const left = admit(new Request("http://localhost/", { signal: watched.signal }));
    const own = run.run((_req, info) => {
      void info.context.signal; // asked for: the client's leaving is watched
      return new Promise((_, reject) => setTimeout(() => reject(new TypeError("its own")), 1));
    }, left.a, false);
    watched.abort();
    assert.equal((await own).status, 500);
    assert.deepEqual(events.slice(3).map((e) => e.type === "request" && [e.status, e.outcome]), [[500, "error"]]);
    events.splice(3);
    const client = new AbortController();
    const bug = new Error("a bug");
    const gone = admit(new Request("http://localhost/", { signal: client.signal }));
    client.abort();
    assert.equal((await run.run(() => Promise.reject(bug), gone.a, false)).status, 500);
    assert.equal((await run.run(() => Promise.resolve(new Response(null, { status: 500 })), admit().a, false)).status, 500);
    assert.deepEqual(errors, [bug]);
    assert.deepEqual(events.slice(3).map((e) => e.type === "request" && [e.status, e.outcome]), [[500, "error"], [500, "error"]]);
    run.dispose();
  });

  test("with a delivery the answer is handed over, read from where the handler left it, and the promise resolves to nothing", async () => {
    const { run, admit } = setup();
    const { a } = admit();
    const box: { res?: Response } = {};
    const delivered: Response[] = [];
    a.delivery = { read: () => box.res, deliver: (res) => void delivered.push(res) };
    const answer = run.run(() => Promise.resolve().then(() => void (box.res = new Response("in the box", { status: 202 }))) as Promise<never>, a, false);
    assert.equal(await answer, undefined);
    assert.deepEqual(delivered.map((r) => r.status), [202]);
    run.dispose();
  });
});
