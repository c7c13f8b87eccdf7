// The guard's head path (_HeadFetch, used by the Node adapter for a request without a body):
// the gates that need nothing of the Request run before it is built; a refusal there is
// answered as prebuilt parts and nothing is translated; anything else is translated once.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { type _AnswerHead, _guardedFetch, _HEAD, createGuard, type GuardOptions, type _HeadAnswer, type _HeadFetch, type _ServingFetch, type _Translate } from "../../src/core/guard.ts";
import { createManualClock } from "../../src/testing/manual_clock.ts";
import type { DenyEvent } from "../../src/core/events.ts";
import { _refusalResponse } from "../../src/core/gates/refuse.ts";
import { createFixedWindowLimiter } from "../../src/core/limits/fixed_window.ts";
import { flushMicrotasks } from "../support/flush.ts";
import { createTurnClock } from "../support/turn_clock.ts";
import { timeSpyLimiter } from "../support/time_spy_limiter.ts";

const PEER = { address: "192.0.2.7", port: 40000 };
// What the Node adapter tells the guard of a request without a body.
const info = () => ({ peer: PEER, declaresBody: false as const, clientGone: false, clientLeft: new AbortController().signal });

function setup(options: GuardOptions, handler: (request: Request) => Response | Promise<Response> = () => new Response("ok")) {
  const clock = createManualClock();
  const denials: DenyEvent[] = [];
  const guard = createGuard({ clock, loadMonitor: false, onDeny: (e) => denials.push(e), ...options });
  const fetch = _guardedFetch(guard, handler) as _ServingFetch;
  const head = fetch[_HEAD] as _HeadFetch;
  // A translation that builds the request and records what it answered (as the adapter's
  // @hono/node-server call does); `fail` is one that cannot build it (a missing Host).
  const answers: (Response | Promise<Response>)[] = [];
  let translations = 0;
  const translate = (fail = false): _Translate => (k, _info) => {
    translations++;
    if (!fail) answers.push(k(new Request("http://localhost/")));
  };
  // Refusals written from parts after a wait (as the adapter writes them), with the info they were for.
  const late: { head: _HeadAnswer; info: unknown; error: unknown }[] = [];
  const answer: _AnswerHead = (head, info, error) => void late.push({ head, info, error });
  const serve = (fail = false, of = info()) => head(of, translate(fail), answer);
  return { clock, guard, denials, serve, answers, late, translations: () => translations };
}

describe("guard: the head path (Node, no body)", () => {
  test("a refusal of a gate before the handler is answered as parts, with the deny event, and nothing is translated", async () => {
    let release!: () => void;
    const s = setup({ concurrencyLimit: 1, shedWaitMs: 0, rateLimits: [{ limiter: createFixedWindowLimiter({ limit: 100, windowMs: 1000 }) }], inFlightPerKey: { perKey: 10 } }, () =>
      new Promise<Response>((resolve) => (release = () => resolve(new Response("ok")))));
    assert.equal(s.serve(), undefined, "the first request is admitted: translated");
    assert.equal(s.translations(), 1);
    const refused = s.serve() as _HeadAnswer;
    assert.equal(s.translations(), 1, "the refused request was not translated");
    // The same answer as the Response the other path sends.
    const retry = refused.headers["retry-after"];
    assert.ok(retry !== undefined);
    const res = _refusalResponse(503, Number(retry) * 1000);
    assert.equal(refused.status, 503);
    assert.equal(refused.body, await res.text());
    assert.deepEqual(Object.fromEntries(Object.entries(refused.headers).filter(([k]) => k !== "content-length")), Object.fromEntries(res.headers));
    assert.equal(refused.headers["content-length"], String(refused.body.length));
    assert.deepEqual(s.denials.map((d) => `${d.layer}/${d.reason}`), ["concurrency/shed"]);
    assert.equal(s.guard.inFlightPerKey!.inFlight(PEER.address), 1, "the refused request's per-key slot was given back");
    release();
    assert.equal((await s.answers[0])!.status, 200);
    assert.equal(s.guard.inFlight, 0);
    s.guard.dispose();
  });

  test("an admitted request is translated once, and the handler gets the translated request; a synchronous answer stays synchronous", () => {
    const seen: Request[] = [];
    const s = setup({ concurrencyLimit: 4 }, (request) => (seen.push(request), new Response("ok")));
    assert.equal(s.serve(), undefined);
    assert.equal(s.translations(), 1);
    assert.equal(seen.length, 1);
    assert.equal(seen[0]!.url, "http://localhost/");
    assert.ok(s.answers[0] instanceof Response && s.answers[0].status === 200);
    assert.equal(s.guard.inFlight, 0);
    s.guard.dispose();
  });

  test("a gate that reads the request (a key function of the user's) has it built first, and its refusal is a Response", async () => {
    const keys: string[] = [];
    const s = setup({
      concurrencyLimit: 4,
      clientKey: (request) => (keys.push((request as Request).url), "k"),
      rateLimits: [{ limiter: createFixedWindowLimiter({ limit: 1, windowMs: 1000 }) }],
    });
    assert.equal(s.serve(), undefined);
    assert.equal(s.serve(), undefined, "the rate limit's refusal goes through the translation");
    assert.deepEqual(keys, ["http://localhost/", "http://localhost/"], "the key function got the translated request");
    assert.equal(s.translations(), 2);
    assert.equal((await s.answers[1])!.status, 429);
    assert.deepEqual(s.denials.map((d) => d.layer), ["rate"]);
    s.guard.dispose();
  });

  test("a built-in key with trusted proxies, and a rule with its own key, read the request: translated before gate 5", () => {
    for (const options of [
      { clientKey: { trustedProxies: ["10.0.0.0/8"] } },
      { rateLimits: [{ limiter: createFixedWindowLimiter({ limit: 1, windowMs: 1000 }), key: (request: Request) => new URL(request.url).pathname }] },
    ] as GuardOptions[]) {
      const s = setup({ concurrencyLimit: 4, rateLimits: [{ limiter: createFixedWindowLimiter({ limit: 1, windowMs: 1000 }) }], ...options });
      s.serve();
      assert.equal(s.serve(), undefined, JSON.stringify(Object.keys(options)));
      assert.equal(s.translations(), 2);
      s.guard.dispose();
    }
  });

  test("a rate-limit refusal with RateLimit fields is a Response: translated, with its own headers", async () => {
    const s = setup({ concurrencyLimit: 4, rateLimitHeaders: true, rateLimits: [{ limiter: createFixedWindowLimiter({ limit: 1, windowMs: 1000 }) }] });
    s.serve();
    assert.equal(s.serve(), undefined);
    const res = await s.answers[1]!;
    assert.equal(res.status, 429);
    assert.ok(res.headers.get("ratelimit") !== null || res.headers.get("ratelimit-policy") !== null);
    assert.deepEqual(s.denials.map((d) => d.layer), ["rate"], "reported once");
    s.guard.dispose();
  });

  test("a request that waits (the admission queue) is translated only when its wait passes, then answered", async () => {
    let release!: () => void;
    const seen: Request[] = [];
    const s = setup({ concurrencyLimit: 1, shedWaitMs: 50 }, (request) => (seen.push(request), new Promise<Response>((resolve) => (release = () => resolve(new Response("ok"))))));
    s.serve();
    assert.equal(s.serve(), undefined, "the waiter is not refused from the head");
    assert.equal(s.translations(), 1, "the waiter is not translated while it waits");
    const first = release;
    first();
    assert.equal((await s.answers[0])!.status, 200);
    await flushMicrotasks();
    assert.equal(s.translations(), 2, "translated once the permit came");
    assert.equal(seen.length, 2, "and its handler ran with the translated request");
    release();
    assert.equal((await s.answers[1])!.status, 200);
    assert.deepEqual(s.late, [], "nothing answered from parts");
    assert.equal(s.guard.inFlight, 0);
    s.guard.dispose();
  });

  test("a request that waited for a later turn (the load gate) meets its rate limit at the time it goes on, not at its arrival", async () => {
    const clock = createTurnClock();
    const { limiter, asked } = timeSpyLimiter(clock);
    const loadMonitor = { maxBatchMs: 20, minAdmitShare: 1, highWatermarkMs: 600_000 };
    const guard = createGuard({ clock, loadMonitor, concurrencyLimit: 64, rateLimits: [{ limiter }] });
    const head = (_guardedFetch(guard, () => ((clock.t += 30), new Response("ok"))) as _ServingFetch)[_HEAD] as _HeadFetch;
    const answers: (Response | Promise<Response>)[] = [];
    const translate: _Translate = (k) => void answers.push(k(new Request("http://localhost/")));
    const serve = () => head(info(), translate, () => assert.fail("no refusal"));
    const arrived = clock.t;
    serve(); // starts the probe: admitted
    serve(); // the batch's first admission
    serve(); // the batch is 30 ms old: it waits for a later turn
    assert.deepEqual(asked, [arrived, arrived + 30], "the first two when they arrived");
    clock.t += 250;
    assert.equal(clock.runImmediates(), 1);
    await flushMicrotasks();
    assert.deepEqual(asked, [arrived, arrived + 30, arrived + 310], "the third when its turn came, not at its arrival (arrived + 60)");
    assert.equal(answers.length, 3);
    guard.dispose();
  });

  test("a refusal after a wait (the queue's wait bound) is answered as parts, with the deny event, and nothing is translated", async () => {
    const s = setup({ concurrencyLimit: 1, shedWaitMs: 50, inFlightPerKey: { perKey: 10 } }, () => new Promise<Response>(() => {}));
    s.serve();
    const waiting = info();
    assert.equal(s.serve(false, waiting), undefined);
    s.clock.advance(60);
    await flushMicrotasks();
    assert.equal(s.translations(), 1, "only the admitted request was translated");
    assert.equal(s.late.length, 1);
    const { head, info: of, error } = s.late[0]!;
    assert.equal(of, waiting, "answered for the request that waited");
    assert.equal(error, undefined);
    assert.equal(head.status, 503);
    const res = _refusalResponse(503, Number(head.headers["retry-after"]) * 1000);
    assert.equal(head.body, await res.text());
    assert.deepEqual(Object.fromEntries(Object.entries(head.headers).filter(([k]) => k !== "content-length")), Object.fromEntries(res.headers));
    assert.deepEqual(s.denials.map((d) => `${d.layer}/${d.reason}`), ["concurrency/queue-timeout"]);
    assert.equal(s.guard.inFlightPerKey!.inFlight(PEER.address), 1, "the refused waiter's per-key slot was given back");
    s.guard.dispose();
  });

  test("a waiter whose client left is refused as parts (aborted), never translated", async () => {
    let release!: () => void;
    const s = setup({ concurrencyLimit: 1, shedWaitMs: 50 }, () => new Promise<Response>((resolve) => (release = () => resolve(new Response("ok")))));
    s.serve();
    const left = new AbortController();
    s.serve(false, { ...info(), clientLeft: left.signal });
    left.abort();
    await flushMicrotasks();
    assert.equal(s.late.length, 1);
    assert.equal(s.late[0]!.head.status, 503);
    assert.deepEqual(s.denials.map((d) => `${d.layer}/${d.reason}`), ["concurrency/aborted"]);
    release();
    await s.answers[0];
    assert.equal(s.translations(), 1);
    assert.equal(s.guard.inFlight, 0, "the permit went to nobody");
    s.guard.dispose();
  });

  test("a failure on the path after a wait is answered as a 500 from parts, with the error for the adapter to log, and what was granted is given back", async () => {
    let release!: () => void;
    const s = setup({ concurrencyLimit: 1, shedWaitMs: 50 }, () => new Promise<Response>((resolve) => (release = () => resolve(new Response("ok")))));
    s.serve();
    const boom = new Error("translation failed");
    const waiting = info();
    let late!: _AnswerHead;
    // The adapter's translation throws (outside its own catch) once the wait has passed.
    const head = (_guardedFetch(s.guard, () => new Response("ok")) as _ServingFetch)[_HEAD] as _HeadFetch;
    const answered = new Promise<Parameters<_AnswerHead>>((resolve) => (late = (...args) => resolve(args)));
    assert.equal(head(waiting, () => { throw boom; }, late), undefined);
    release();
    const [part, of, error] = await answered;
    assert.equal(part.status, 500);
    assert.equal(of, waiting);
    assert.equal(error, boom);
    await flushMicrotasks();
    assert.equal(s.guard.inFlight, 0, "the permit the wait granted was given back");
    s.guard.dispose();
  });

  test("when the request cannot be built, what the gates handed out is given back: the permit, the per-key slot, and a permit a wait grants later", async () => {
    let release!: () => void;
    const s = setup({ concurrencyLimit: 1, shedWaitMs: 50, inFlightPerKey: { perKey: 10 } }, () =>
      new Promise<Response>((resolve) => (release = () => resolve(new Response("ok")))));
    assert.equal(s.serve(true), undefined);
    assert.equal(s.guard.inFlight, 0, "the permit of the untranslatable request was released");
    assert.equal(s.guard.inFlightPerKey!.inFlight(PEER.address), 0);
    s.serve(); // holds the one permit
    assert.equal(s.serve(true), undefined, "waits for the permit, but cannot be built");
    release();
    await s.answers[0];
    await flushMicrotasks();
    assert.equal(s.guard.inFlight, 0, "the permit the wait granted was given back");
    assert.equal(s.guard.inFlightPerKey!.inFlight(PEER.address), 0);
    s.serve();
    assert.equal(s.guard.inFlight, 1, "the next request gets the permit");
    release();
    await s.answers[1];
    s.guard.dispose();
  });

  test("with exempt requests, the request is built first (which gates apply is a question about it)", async () => {
    const t = setup({ concurrencyLimit: 1, shedWaitMs: 0, exempt: ["/"] }, () => new Promise<Response>(() => {}));
    t.serve();
    assert.equal(t.serve(), undefined, "exempt from the concurrency limit: admitted");
    assert.equal(t.translations(), 2);
    assert.equal(t.denials.length, 0);
    t.guard.dispose();
  });
});
