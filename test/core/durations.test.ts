// Every duration option goes through one check (_validate.ts's _durationMs): a delay of
// 2^31 ms or more overflows Node's timers to 1 ms (RUNTIMES.md), so it is refused up front
// with a RangeError naming the field, while 2^31 - 1 and — where it was allowed — Infinity
// still pass.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import {
  createConcurrencyLimit,
  createDeadlineWheel,
  createGuard,
  createInFlightLimiter,
  createLoadMonitor,
  createMemoryCeiling,
  createShutdownController,
  resolveConfig,
  runUntilDrained,
  validateLifecycle,
} from "../../src/core/mod.ts";
import { createShedLogger } from "../../src/core/shed_log.ts";
import { createManualClock } from "../../src/testing/mod.ts";
import { timeout } from "../../src/hono/mod.ts";
import { createFakeServer } from "../support/fake_server.ts";

const OVER = 2 ** 31;
const MAX = 2 ** 31 - 1;

const clock = () => createManualClock();
const drain = (options: Parameters<typeof runUntilDrained>[2]) =>
  runUntilDrained(createFakeServer(), createShutdownController({ mode: "manual" }), options);

// [field, a call that sets it to `ms`]
const CASES: [string, (ms: number) => unknown][] = [
  ["drainTimeoutMs", (ms) => resolveConfig({ drainTimeoutMs: ms })],
  ["requestTimeoutMs", (ms) => resolveConfig({ requestTimeoutMs: ms, drainTimeoutMs: Infinity })],
  ["drainTimeoutMs", (ms) => drain({ drainTimeoutMs: ms })],
  ["preStopDelayMs", (ms) => drain({ drainTimeoutMs: Infinity, preStopDelayMs: ms })],
  ["drainTimeoutMs", (ms) => validateLifecycle({ requestTimeoutMs: Infinity, drainTimeoutMs: ms })],
  ["preStopDelayMs", (ms) => validateLifecycle({ requestTimeoutMs: Infinity, drainTimeoutMs: Infinity, preStopDelayMs: ms })],
  ["platformGraceMs", (ms) => validateLifecycle({ requestTimeoutMs: 1, drainTimeoutMs: 2, platformGraceMs: ms })],
  ["flushMarginMs", (ms) => validateLifecycle({ requestTimeoutMs: 1, drainTimeoutMs: 2, flushMarginMs: ms })],
  ["shedWaitMs", (ms) => createGuard({ shedWaitMs: ms, loadMonitor: false, clock: clock() }).dispose()],
  ["shedWaitMs", (ms) => createConcurrencyLimit({ limit: 1, shedWaitMs: ms, clock: clock() })],
  ["shedWaitMs", (ms) => createInFlightLimiter({ shedWaitMs: ms, clock: clock() })],
  ["intervalMs", (ms) => createMemoryCeiling({ ceilingBytes: 1 << 30, intervalMs: ms, rss: () => 1, clock: clock() }).dispose()],
  ["intervalMs", (ms) => createGuard({ memory: { ceilingBytes: 1 << 30, intervalMs: ms }, loadMonitor: false, clock: clock() }).dispose()],
  ["sampleIntervalMs", (ms) => createLoadMonitor({ sampleIntervalMs: ms, clock: clock() }).dispose()],
  ["sampleIntervalMs", (ms) => createGuard({ loadMonitor: { sampleIntervalMs: ms }, clock: clock() }).dispose()],
  ["maxBatchMs", (ms) => createLoadMonitor({ maxBatchMs: ms, clock: clock() }).dispose()],
  ["resolutionMs", (ms) => createDeadlineWheel({ resolutionMs: ms, clock: clock() })],
  ["intervalMs", (ms) => createShedLogger({ intervalMs: ms, log: () => {}, clock: clock() }).flush()],
  ["timeoutMs", (ms) => timeout(ms)],
];

describe("durations", () => {
  for (const [field, call] of CASES) {
    test(`durations: "${field}" of 2^31 ms is refused with a RangeError naming it; 2^31 - 1 passes (${call.toString().slice(8, 60)}…)`, () => {
      assert.throws(() => call(OVER), (error: unknown) => {
        assert.ok(error instanceof RangeError, String(error));
        assert.match(error.message, new RegExp(`"${field}" must be at most 2147483647`));
        assert.match(error.message, /current value is 2147483648/);
        return true;
      });
      call(MAX);
    });
  }

  test("durations: a request's own timeoutMs of 2^31 ms is refused when set, naming it; Infinity still disables it", async () => {
    const guard = createGuard({ loadMonitor: false, clock: createManualClock() });
    const seen: unknown[] = [];
    const fetch = guard.wrap((_req, { context }) => {
      try {
        context.timeoutMs = OVER;
      } catch (error) {
        seen.push(error);
      }
      context.timeoutMs = Infinity;
      context.timeoutMs = MAX;
      return new Response("ok");
    });
    assert.equal((await fetch(new Request("http://localhost/"))).status, 200);
    guard.dispose();
    assert.equal(seen.length, 1);
    assert.ok(seen[0] instanceof RangeError && /"timeoutMs" must be at most 2147483647/.test(seen[0].message), String(seen[0]));
  });

  test("durations: Infinity is still accepted where it was (request timeout, drain window)", () => {
    assert.equal(resolveConfig({ requestTimeoutMs: Infinity, drainTimeoutMs: Infinity }).drainTimeoutMs, Infinity);
    assert.equal(validateLifecycle({ requestTimeoutMs: Infinity, drainTimeoutMs: Infinity }).drainTimeoutMs, Infinity);
  });
});
