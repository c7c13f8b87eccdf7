// User code called while serving, misbehaving: an async sink or logger whose promise rejects,
// a logger that throws, key functions and an exempt predicate that return a promise or
// throw. None may reach the process (an unhandled rejection ends it on Node, Deno and Bun and
// fails this test), stop a shutdown, or turn a limit off: keys fail closed, exempt exempts nothing.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { createGuard, type GuardOptions } from "../../src/core/guard.ts";
import { createShutdownController } from "../../src/core/lifecycle/shutdown_controller.ts";
import { createFixedWindowLimiter } from "../../src/core/limits/fixed_window.ts";
import { createShedLogger } from "../../src/core/shed_log.ts";
import { _keyResult, _safeLogger, _settleQuietly } from "../../src/core/_user_code.ts";
import type { HygieneEvent } from "../../src/core/events.ts";
import type { LogRecord } from "../../src/core/host/host.ts";
import { createManualClock } from "../../src/testing/manual_clock.ts";
import { flushMicrotasks } from "../support/flush.ts";

const GET = (path = "/") => new Request(`http://localhost${path}`);
/** A macrotask later: a rejection nobody handled has been reported by then. */
const aTurn = () => new Promise((r) => setTimeout(r, 0));
const rejects = async (..._args: unknown[]): Promise<void> => {
  throw new Error("async user code failed");
};

function setup(options: GuardOptions) {
  const events: HygieneEvent[] = [];
  const guard = createGuard({ clock: createManualClock(), log: () => {}, onEvent: (e) => events.push(e), ...options });
  return { guard, events, faults: () => events.filter((e) => e.type === "fault") };
}

describe("user code: the helpers", () => {
  test("user code: a promise a callback returned gets a rejection handler; anything else is left alone", async () => {
    const seen: unknown[] = [];
    assert.equal(_settleQuietly(rejects(), (e) => seen.push(e)), true);
    assert.equal(_settleQuietly({ then: (_: unknown, no: (e: unknown) => void) => no("thenable") }, (e) => seen.push(e)), true);
    for (const value of [undefined, null, 0, "x", {}, () => {}]) assert.equal(_settleQuietly(value), false);
    await aTurn();
    assert.equal(seen.length, 2);
  });

  test("user code: a key must be a string (a finite number is read as its string); a promise, null, NaN or an object is a TypeError saying which", async () => {
    assert.equal(_keyResult("k", "f"), "k");
    assert.equal(_keyResult("", "f"), "");
    assert.equal(_keyResult(42, "f"), "42");
    assert.throws(() => _keyResult(Number.NaN, "f"), /it returned NaN/);
    assert.throws(() => _keyResult(Promise.resolve("k"), "the key function"), /the key function must return a string: it returned a promise/);
    assert.throws(() => _keyResult(rejects(), "f"), /a promise/);
    assert.throws(() => _keyResult(null, "f"), /it returned null/);
    assert.throws(() => _keyResult({}, "f"), /it returned object/);
    await aTurn(); // the rejected one was handled
  });

  test("user code: a safe logger drops a line its logger cannot write (a throw, a rejection), and wraps once", async () => {
    const lines: LogRecord[] = [];
    const safe = _safeLogger((record) => {
      lines.push(record);
      if (record.msg === "throw") throw new Error("transport closed");
      if (record.msg === "reject") return rejects() as unknown as void;
    });
    safe({ level: "info", msg: "throw" });
    safe({ level: "info", msg: "reject" });
    safe({ level: "info", msg: "fine" });
    assert.deepEqual(lines.map((l) => l.msg), ["throw", "reject", "fine"]);
    assert.equal(_safeLogger(safe), safe);
    await aTurn();
  });
});

describe("user code: while serving", () => {
  test("user code: async onEvent, onDeny and log hooks that reject leave the request path and the process alone", async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const guard = createGuard({
      clock: createManualClock(),
      concurrencyLimit: 1,
      shedWaitMs: 0,
      onEvent: rejects,
      onDeny: rejects,
      log: rejects,
    });
    const fetch = guard.wrap(async (request) => {
      if (new URL(request.url).pathname === "/hold") await held;
      if (new URL(request.url).pathname === "/throw") throw new Error("handler failed (logged)");
      return new Response("ok");
    });
    const first = fetch(GET("/hold"));
    await flushMicrotasks();
    assert.equal((await fetch(GET())).status, 503);
    release();
    assert.equal((await first).status, 200);
    assert.equal((await fetch(GET("/throw"))).status, 500);
    await aTurn();
    guard.dispose();
  });

  test("user code: an async shed logger that rejects is no unhandled rejection", async () => {
    const clock = createManualClock();
    const shed = createShedLogger({ log: rejects, clock, intervalMs: 1000 });
    shed({ type: "deny", layer: "concurrency", reason: "queue-full", status: 503 });
    shed({ type: "deny", layer: "concurrency", reason: "queue-full", status: 503 });
    clock.advance(1000);
    shed({ type: "deny", layer: "concurrency", reason: "queue-full", status: 503 });
    shed.flush();
    await aTurn();
  });

  test("user code: a client-key function that returns a promise, nothing or an object fails closed (429 limiter-error and a fault), as one that throws", async () => {
    for (const clientKey of [async () => "k", () => undefined, () => null, () => ({}), () => { throw new Error("no key"); }]) {
      const { guard, events, faults } = setup({
        clientKey: clientKey as never,
        rateLimits: [{ limiter: createFixedWindowLimiter({ limit: 100, windowMs: 60_000, name: "ip" }) }],
      });
      const res = await guard.wrap(() => new Response("ok"))(GET());
      assert.equal(res.status, 429, String(clientKey));
      assert.equal(faults().length, 1);
      assert.equal((faults()[0] as { source: string }).source, "client-key");
      assert.ok(events.some((e) => e.type === "deny" && e.reason === "limiter-error"));
      guard.dispose();
    }
    await aTurn();
  });

  test("user code: a rate rule's key function, or a scope's, that returns a promise fails closed instead of counting each request under a new key", async () => {
    const one = setup({ rateLimits: [{ limiter: createFixedWindowLimiter({ limit: 2, windowMs: 60_000, name: "ip" }), key: (async () => "k") as never }] });
    const two = setup({
      rateLimits: [
        { limiter: createFixedWindowLimiter({ limit: 100, windowMs: 60_000, name: "all" }), scope: "global", key: () => "all" },
        { limiter: createFixedWindowLimiter({ limit: 2, windowMs: 60_000, name: "tenant" }), scope: "tenant", key: (async () => "t") as never },
      ],
    });
    for (const { guard, faults } of [one, two]) {
      const fetch = guard.wrap(() => new Response("ok"));
      const statuses: number[] = [];
      for (let i = 0; i < 4; i++) statuses.push((await fetch(GET())).status);
      assert.deepEqual(statuses, [429, 429, 429, 429]);
      assert.equal(faults().length, 4);
      guard.dispose();
    }
    await aTurn();
  });

  test("user code: an exempt predicate that returns a promise, or throws, exempts nothing (the gates apply) and reports a fault", async () => {
    for (const exempt of [async () => true, rejects, () => { throw new Error("broken predicate"); }]) {
      const { guard, faults } = setup({ concurrencyLimit: 1, shedWaitMs: 0, exempt: exempt as never });
      let release!: () => void;
      const held = new Promise<void>((r) => (release = r));
      const fetch = guard.wrap(async () => (await held, new Response("ok")));
      const first = fetch(GET("/healthz"));
      await flushMicrotasks();
      assert.equal((await fetch(GET("/healthz"))).status, 503, String(exempt));
      release();
      assert.equal((await first).status, 200);
      assert.equal(faults().filter((e) => (e as { source: string }).source === "exempt").length, 2);
      guard.dispose();
    }
    await aTurn();
  });

  test("user code: a logger that throws does not stop a shutdown: the signal fires and a second call is ignored", () => {
    const controller = createShutdownController({ mode: "manual", log: () => {
      throw new Error("logger transport closed");
    } });
    controller.shutdown("first");
    assert.equal(controller.signal.aborted, true);
    controller.shutdown("second");
    assert.equal(controller.signal.aborted, true);
  });
});
