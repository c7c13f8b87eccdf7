import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { createShedLogger } from "../../src/core/shed_log.ts";
import type { DenyEvent } from "../../src/core/events.ts";
import type { LogRecord } from "../../src/core/host/host.ts";
import { createGuard } from "../../src/core/guard.ts";
import { createManualClock } from "../../src/testing/manual_clock.ts";
import { createFixedWindowLimiter } from "../../src/core/limits/fixed_window.ts";
import { flushMicrotasks } from "../support/flush.ts";

const SHED: DenyEvent = { type: "deny", layer: "concurrency", reason: "shed", status: 503, retryAfterMs: 1000 };

function setup(intervalMs = 10_000) {
  const clock = createManualClock();
  const lines: LogRecord[] = [];
  const sink = createShedLogger({ log: (record) => void lines.push(record), intervalMs, clock });
  return { clock, lines, sink };
}

describe("shed logger: a storm is a few lines", () => {
  test("shed logger: 10,000 refusals in one interval log one line, then one summary of 9,999 when the next interval starts", () => {
    const { clock, lines, sink } = setup();
    for (let i = 0; i < 10_000; i++) {
      sink(SHED);
      if (i % 2 === 1) clock.advance(1); // spread over the first 5 s of the interval
    }
    assert.deepEqual(lines, [{ level: "warn", msg: "request refused", layer: "concurrency", reason: "shed", status: 503 }]);
    clock.advance(5_000);
    sink(SHED);
    assert.deepEqual(lines.slice(1), [
      { level: "warn", msg: "requests refused", layer: "concurrency", reason: "shed", count: 9_999, intervalMs: 10_000 },
      { level: "warn", msg: "request refused", layer: "concurrency", reason: "shed", status: 503 },
    ]);
  });

  test("shed logger: flush() writes the pending summary at once, and only once", () => {
    const { lines, sink } = setup();
    for (let i = 0; i < 10_000; i++) sink(SHED);
    sink.flush();
    sink.flush();
    assert.equal(lines.length, 2);
    assert.equal(lines[1]!.msg, "requests refused");
    assert.equal(lines[1]!.count, 9_999);
    sink(SHED);
    sink.flush();
    assert.deepEqual(lines.slice(2).map((l) => [l.msg, l.count]), [["requests refused", 1]]);
  });

  test("shed logger: the interval is measured from its first refusal, on the injected clock", () => {
    const { clock, lines, sink } = setup(1_000);
    clock.advance(5_000);
    sink(SHED);
    clock.advance(999);
    sink(SHED);
    assert.equal(lines.length, 1);
    clock.advance(1);
    sink(SHED);
    assert.deepEqual(lines.map((l) => [l.msg, l.count]), [
      ["request refused", undefined],
      ["requests refused", 1],
      ["request refused", undefined],
    ]);
    assert.equal(clock.pendingTimers, 0, "no background timer");
  });

  test("shed logger: a lone refusal per interval is one line and never a summary", () => {
    const { clock, lines, sink } = setup(1_000);
    for (let i = 0; i < 3; i++) {
      sink(SHED);
      clock.advance(1_000);
    }
    sink.flush();
    assert.deepEqual(lines.map((l) => l.msg), ["request refused", "request refused", "request refused"]);
  });
});

describe("shed logger: kinds", () => {
  test("shed logger: each layer, reason, class and scope is summarised on its own line", () => {
    const { clock, lines, sink } = setup(1_000);
    const rate = (scope: string): DenyEvent => ({ type: "deny", layer: "rate", reason: "over-limit", status: 429, limiterClass: "ip", scope });
    for (let i = 0; i < 5; i++) sink(SHED);
    for (let i = 0; i < 3; i++) sink(rate("global"));
    for (let i = 0; i < 2; i++) sink(rate("tenant"));
    assert.equal(lines.length, 3);
    assert.deepEqual(lines[1], { level: "warn", msg: "request refused", layer: "rate", reason: "over-limit", limiterClass: "ip", scope: "global", status: 429 });
    clock.advance(1_000);
    sink.flush();
    assert.deepEqual(lines.slice(3).map((l) => [l.layer, l.scope, l.count]), [
      ["concurrency", undefined, 4],
      ["rate", "global", 2],
      ["rate", "tenant", 1],
    ]);
  });

  test("shed logger: request and fault events are ignored, and no line ever names a client key", () => {
    const { lines, sink } = setup();
    const clock = createManualClock();
    const limiter = createFixedWindowLimiter({ limit: 1, clock, name: "ip", onEvent: sink });
    for (let i = 0; i < 5; i++) limiter.take("203.0.113.7");
    limiter.take("203.0.113.7", 1, NaN);
    sink({ type: "request", status: 200, durationMs: 3, outcome: "ok" });
    sink.flush();
    assert.deepEqual(lines.map((l) => [l.msg, l.reason, l.count]), [
      ["request refused", "over-limit", undefined],
      ["request refused", "limiter-error", undefined],
      ["requests refused", "over-limit", 3],
    ]);
    assert.ok(!JSON.stringify(lines).includes("203.0.113.7"));
  });

  test("shed logger: it works as a guard's onEvent sink", async () => {
    const { lines, sink, clock } = setup();
    const guard = createGuard({ clock, concurrencyLimit: 1, shedWaitMs: 0, onEvent: sink });
    let release!: () => void;
    const held = guard.wrap(() => new Promise<Response>((resolve) => (release = () => resolve(new Response("ok")))));
    const first = held(new Request("http://localhost/"));
    await flushMicrotasks();
    for (let i = 0; i < 4; i++) assert.equal((await held(new Request("http://localhost/"))).status, 503);
    release();
    await first;
    sink.flush();
    assert.deepEqual(lines.map((l) => [l.msg, l.layer, l.reason, l.count]), [
      ["request refused", "concurrency", "shed", undefined],
      ["requests refused", "concurrency", "shed", 3],
    ]);
  });
});

describe("shed logger: robustness", () => {
  test("shed logger: a throwing logger or clock never escapes the sink", () => {
    const sink = createShedLogger({ log: () => { throw new Error("disk full"); } });
    assert.doesNotThrow(() => sink(SHED));
    const broken = createShedLogger({
      log: () => {},
      clock: { now: () => { throw new Error("no clock"); }, setTimeout: () => ({ cancel() {} }), setInterval: () => ({ cancel() {} }) },
    });
    assert.doesNotThrow(() => broken(SHED));
  });

  test("shed logger: a non-finite clock reading counts into the interval instead of logging every refusal", () => {
    const lines: LogRecord[] = [];
    let now = 0;
    const clock = { now: () => now, setTimeout: () => ({ cancel() {} }), setInterval: () => ({ cancel() {} }) };
    const sink = createShedLogger({ log: (r) => void lines.push(r), clock });
    sink(SHED);
    now = NaN;
    for (let i = 0; i < 100; i++) sink(SHED);
    sink.flush();
    assert.deepEqual(lines.map((l) => l.count), [undefined, 100]);
  });

  test("shed logger: bad options throw up front, naming the field", () => {
    assert.throws(() => createShedLogger(undefined as never), { name: "TypeError", message: /"log" must be a function/ });
    assert.throws(() => createShedLogger({ log: "console" as never }), TypeError);
    assert.throws(() => createShedLogger({ log: () => {}, intervalMs: 0 }), {
      name: "RangeError",
      message: 'Cannot create shed logger as "intervalMs" must be a positive integer: current value is 0',
    });
  });
});
