import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { createGuard, type GuardOptions } from "../../../src/core/guard.ts";
import { _concurrencyGate } from "../../../src/core/gates/concurrency.ts";
import { _createConcurrencyLimit } from "../../../src/core/overload/concurrency_limit.ts";
import type { _Admission } from "../../../src/core/request/admission.ts";
import type { DenyEvent } from "../../../src/core/events.ts";
import { createManualClock, type ManualClock } from "../../../src/testing/manual_clock.ts";
import { flushMicrotasks } from "../../support/flush.ts";

const GET = (signal?: AbortSignal) => new Request("http://localhost/", signal === undefined ? {} : { signal });

function setup(options: GuardOptions = {}) {
  const clock: ManualClock = createManualClock();
  const denials: DenyEvent[] = [];
  const guard = createGuard({ clock, loadMonitor: false, onDeny: (e) => denials.push(e), ...options });
  return { clock, guard, denials };
}

/** A handler that takes `ms` on the manual clock, then answers with `status`. */
const takes = (clock: ManualClock, ms: number, status = 200) => (): Promise<Response> =>
  new Promise<Response>((resolve) => clock.setTimeout(() => resolve(new Response("ok", { status })), ms));

describe("concurrency gate", () => {
  test("concurrency gate: the limit is adaptive by default; a number fixes it and Infinity uncaps it", () => {
    const { guard } = setup();
    assert.equal(guard.concurrency.adaptive, true);
    assert.equal(guard.concurrency.limit, 1, "it starts at its floor and grows");
    assert.equal(guard.concurrency.shedWaitMs, 500);
    assert.equal(setup({ concurrencyLimit: 32 }).guard.concurrency.adaptive, false);
    assert.equal(setup({ concurrencyLimit: 32 }).guard.concurrency.limit, 32);
    assert.equal(setup({ concurrencyLimit: Infinity }).guard.concurrency.limit, Infinity);
    assert.equal(setup({ concurrencyLimit: { initialLimit: 3, maxLimit: 10 } }).guard.concurrency.limit, 3);
    assert.throws(() => createGuard({ concurrencyLimit: { minLimit: 0 } }), /Cannot create adaptive limit as "minLimit" must be a positive integer: current value is 0/);
    assert.throws(() => createGuard({ concurrencyLimit: -1 }), /"concurrencyLimit" must be a positive integer or Infinity/);
    assert.throws(() => createGuard({ maxWaiting: -1 }), /"maxWaiting" must be a non-negative integer/);
    assert.throws(() => createGuard({ lifoAfterMs: 1.5 }), /"lifoAfterMs" must be a non-negative integer/);
    assert.throws(() => createGuard({ standingWaitMs: -1 }), /"standingWaitMs" must be a non-negative integer/);
    assert.throws(() => createGuard({ shedWaitMs: 50, standingWaitMs: 60 }), /"standingWaitMs" must be at most "shedWaitMs" \(50\)/);
  });

  test("concurrency gate: the fast path answers synchronously; only a request that must wait gets a promise", async () => {
    const gate = _concurrencyGate(_createConcurrencyLimit({ limit: 1, shedWaitMs: 100, clock: createManualClock() }));
    const held: Disposable[] = [];
    const admission = { startedAt: 0, request: GET(), hold: (d: Disposable) => void held.push(d) } as unknown as _Admission;
    assert.equal(gate.admit(admission), undefined, "a free permit: PASS, not a promise");
    const waiting = gate.admit(admission);
    assert.ok(waiting instanceof Promise);
    held[0]![Symbol.dispose]();
    assert.equal(await waiting, undefined);
  });

  test("concurrency gate: a permit is dated at the request's arrival: the adaptive limit's sample includes a wait at an earlier gate (the load gate's later turn: queueing in this process too)", () => {
    const clock = createManualClock(1000);
    const samples: number[] = [];
    const adaptive = { limit: 10, baselineMs: undefined, minLimit: 1, maxLimit: 10, sample: (ms: number) => void samples.push(ms), stalled() {} };
    const gate = _concurrencyGate(_createConcurrencyLimit({ limit: adaptive, shedWaitMs: 100, clock }));
    clock.advance(250); // it waited 250 ms for a later turn at the load gate
    const admission = { startedAt: 1000, waited: true, request: GET(), hold: () => {}, permit: undefined } as unknown as _Admission;
    assert.equal(gate.admit(admission), undefined);
    clock.advance(30); // its handler's time
    (admission.permit as unknown as { complete(): void }).complete();
    // Dated when its path went on (30), Node's I/O-bound storm lost 2-3 % of its goodput.
    assert.deepEqual(samples, [280]);
  });

  test("concurrency gate: each sample tells the adaptive limit its request's kind: its URL's path (no scheme, host or query), from the adapter's request target where it gives one (node's head path builds no Request); a fixed limit computes none", () => {
    const kinds: unknown[] = [];
    const adaptive = { limit: 10, baselineMs: undefined, minLimit: 1, maxLimit: 10, sample: (...args: unknown[]) => void kinds.push(args[5]), stalled() {} };
    const gate = _concurrencyGate(_createConcurrencyLimit({ limit: adaptive, shedWaitMs: 100, clock: createManualClock() }));
    const through = (request: Request | undefined, info?: { target: string }) => {
      const admission = { startedAt: 0, request, info, hold: () => {}, permit: undefined } as unknown as _Admission;
      assert.equal(gate.admit(admission), undefined);
      (admission.permit as unknown as { complete(): void }).complete();
    };
    through(new Request("http://localhost/slow?id=7"));
    through(new Request("http://other.example:8080/slow"));
    through(new Request("http://localhost/fast"));
    through(undefined, { target: "/report?q=1" });
    through(undefined, { target: "http://evil.example/report" }); // an absolute-form request target
    assert.deepEqual(kinds, ["/slow", "/slow", "/fast", "/report", "/report"], "the path alone: a Host of the client's choosing makes no kind of its own");
    const fixed = _concurrencyGate(_createConcurrencyLimit({ limit: 10, clock: createManualClock() }));
    const admission = { startedAt: 0, request: undefined, hold: () => {}, permit: undefined } as unknown as _Admission;
    assert.equal(fixed.admit(admission), undefined, "no URL read: the request is not even there");
  });

  test("concurrency gate: at the limit a request waits for a permit instead of being refused", async () => {
    const { guard, clock, denials } = setup({ concurrencyLimit: 2 });
    const fetch = guard.wrap(takes(clock, 10));
    const all = Array.from({ length: 6 }, () => fetch(GET()));
    await flushMicrotasks();
    assert.equal(guard.inFlight, 2);
    assert.equal(guard.concurrency.waiting, 4);
    for (let i = 0; i < 3; i++) {
      clock.advance(10);
      await flushMicrotasks();
    }
    assert.deepEqual((await Promise.all(all)).map((r) => r.status), [200, 200, 200, 200, 200, 200]);
    assert.deepEqual(denials, []);
  });

  test("concurrency gate: a waiter past the shed wait, or one finding the queue full, gets 503 under layer concurrency", async () => {
    const { guard, clock, denials } = setup({ concurrencyLimit: 1, shedWaitMs: 100, maxWaiting: 1 });
    const fetch = guard.wrap(takes(clock, 1000));
    const first = fetch(GET());
    const waiter = fetch(GET());
    const full = await fetch(GET());
    assert.equal(full.status, 503);
    assert.equal(full.headers.get("retry-after"), "1");
    clock.advance(100);
    assert.equal((await waiter).status, 503);
    assert.deepEqual(denials.map((d) => [d.layer, d.reason, d.status]), [["concurrency", "queue-full", 503], ["concurrency", "queue-timeout", 503]]);
    clock.advance(900);
    assert.equal((await first).status, 200);
  });

  test("concurrency gate: a waiter whose client leaves is removed at once and never runs", async () => {
    const { guard, clock, denials } = setup({ concurrencyLimit: 1 });
    let ran = 0;
    const fetch = guard.wrap(() => (ran++, takes(clock, 10)()));
    const first = fetch(GET());
    const client = new AbortController();
    const gone = fetch(GET(client.signal));
    await flushMicrotasks();
    assert.equal(guard.concurrency.waiting, 1);
    client.abort();
    await flushMicrotasks();
    assert.equal(guard.concurrency.waiting, 0, "its place is released before any permit frees");
    assert.equal((await gone).status, 503);
    clock.advance(10);
    await first;
    assert.equal(ran, 1);
    assert.deepEqual(denials.map((d) => d.reason), ["aborted"]);
  });

  test("concurrency gate: refused, failed and abandoned requests are no latency samples for the adaptive limit", async () => {
    const { guard, clock } = setup({ concurrencyLimit: { initialLimit: 20, windowSamples: 1, windowMs: 1 }, requestTimeoutMs: 50, drainTimeoutMs: 100, bodyLimitBytes: 1 });
    const batch = async (handler: () => Promise<Response> | Response, n = 20, ms = 10, request = () => GET()) => {
      const fetch = guard.wrap(handler);
      const all = Array.from({ length: n }, () => fetch(request()));
      await flushMicrotasks();
      clock.advance(ms);
      await flushMicrotasks();
      return Promise.all(all);
    };
    for (let i = 0; i < 6; i++) await batch(takes(clock, 10)); // a 10 ms baseline; the limit grows
    const grown = guard.concurrency.limit;
    assert.ok(grown > 20, `grew while every permit was used at the baseline: ${grown}`);
    // Fast failures, over-cap bodies refused after the permit (gate 8), client aborts, timeouts:
    // if they counted, the baseline would fall to ~0 and every normal request would look slow.
    for (let i = 0; i < 5; i++) {
      await batch(() => new Response("down", { status: 503 }), 20, 1);
      await batch(() => new Response("ok"), 20, 1, () => new Request("http://localhost/", { method: "POST", body: "too long", headers: { "content-length": "8" } }));
      const client = new AbortController();
      const honours = (_r: Request, { context }: { context: { signal: AbortSignal } }) =>
        new Promise<Response>((_, reject) => context.signal.addEventListener("abort", () => reject(context.signal.reason)));
      const aborted = batch(honours as never, 5, 0, () => GET(client.signal));
      await flushMicrotasks();
      client.abort();
      await aborted;
      await batch(honours as never, 5, 100); // and the deadline (408, on a coarse wheel) ends these
    }
    for (let i = 0; i < 6; i++) await batch(takes(clock, 10));
    assert.ok(guard.concurrency.limit >= grown, `no shrink after the failures: ${guard.concurrency.limit} >= ${grown}`);
  });
});
