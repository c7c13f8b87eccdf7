import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { createShutdownController, type StopInfo } from "../../../src/core/lifecycle/shutdown_controller.ts";
import { createManualClock } from "../../../src/testing/manual_clock.ts";
import type { LogRecord } from "../../../src/core/host/host.ts";
import { createFakeHost } from "../../support/fake_host.ts";
import { flushMicrotasks } from "../../support/flush.ts";

/** Resolves to the StopInfo if `stopped` settled by now, else undefined. */
async function settledYet(stopped: Promise<StopInfo>): Promise<StopInfo | undefined> {
  let got: StopInfo | undefined;
  void stopped.then((info) => (got = info));
  await flushMicrotasks();
  return got;
}

describe("shutdown controller", () => {
  test("shutdown controller: SIGTERM from the host aborts the signal, settles stopped and records when", async () => {
    const fake = createFakeHost();
    fake.clock.advance(1234);
    const controller = createShutdownController({ host: fake.host });
    assert.deepEqual(fake.installed(), ["SIGTERM", "SIGINT"]);
    assert.equal(controller.signal.aborted, false);
    assert.equal(controller.firedAt, undefined);
    assert.equal(fake.signal("SIGTERM"), true);
    assert.equal(controller.signal.aborted, true);
    assert.equal(controller.firedAt, 1234);
    assert.deepEqual(await controller.stopped, { reason: "SIGTERM", at: 1234 });
    controller.dispose();
  });

  test("shutdown controller: Ctrl-C stops it too, with SIGINT as the reason", async () => {
    const fake = createFakeHost();
    const controller = createShutdownController({ host: fake.host });
    fake.signal("SIGINT");
    assert.equal((await controller.stopped).reason, "SIGINT");
  });

  test("shutdown controller: a second signal is logged and changes nothing; the listener stays installed", async () => {
    const fake = createFakeHost();
    const controller = createShutdownController({ host: fake.host });
    fake.signal("SIGTERM");
    fake.clock.advance(5_000);
    fake.signal("SIGINT");
    controller.shutdown("again");
    assert.equal(controller.firedAt, 0);
    assert.deepEqual(await controller.stopped, { reason: "SIGTERM", at: 0 });
    const ignored = fake.logs.filter((r) => r.msg.includes("ignored"));
    assert.equal(ignored.length, 2);
    assert.equal(ignored[0]!.reason, "SIGINT");
    assert.equal(ignored[0]!.firstReason, "SIGTERM");
    // Still installed: the runtime's default action (killing the process) never applies.
    assert.deepEqual(fake.installed(), ["SIGTERM", "SIGINT"]);
  });

  test("shutdown controller: manual mode installs nothing and stops on shutdown(reason)", async () => {
    const fake = createFakeHost();
    const controller = createShutdownController({ host: fake.host, mode: "manual" });
    assert.deepEqual(fake.installed(), []);
    fake.clock.advance(7);
    controller.shutdown("embedder stop");
    assert.deepEqual(await controller.stopped, { reason: "embedder stop", at: 7 });
    assert.ok(controller.signal.reason instanceof DOMException);
    assert.equal((controller.signal.reason as DOMException).name, "AbortError");
  });

  test("shutdown controller: without a host it is manual, on the given clock", async () => {
    const clock = createManualClock(50);
    const controller = createShutdownController({ clock, log: () => {} });
    assert.equal(controller.clock, clock);
    controller.shutdown();
    assert.deepEqual(await controller.stopped, { reason: "shutdown", at: 50 });
  });

  test("shutdown controller: a signal whose install fails is logged and the other still stops", async () => {
    const fake = createFakeHost({ failInstall: ["SIGINT"] });
    const controller = createShutdownController({ host: fake.host });
    assert.deepEqual(fake.installed(), ["SIGTERM"]);
    assert.equal(fake.logs.filter((r) => r.msg === "signal handler install failed").length, 1);
    assert.equal(fake.signal("SIGINT"), false);
    assert.equal(await settledYet(controller.stopped), undefined);
    fake.signal("SIGTERM");
    assert.equal((await controller.stopped).reason, "SIGTERM");
  });

  test("shutdown controller: when both installs fail it logs both, never fires and runs until killed", async () => {
    const fake = createFakeHost({ failInstall: ["SIGTERM", "SIGINT"] });
    const controller = createShutdownController({ host: fake.host });
    assert.equal(fake.logs.filter((r) => r.level === "error").length, 2);
    assert.equal(fake.signal("SIGTERM"), false);
    fake.clock.advance(3_600_000);
    assert.equal(await settledYet(controller.stopped), undefined);
    assert.equal(controller.signal.aborted, false);
    assert.equal(controller.firedAt, undefined);
  });

  test("shutdown controller: a host whose onShutdownSignal throws is logged, never fires, never crashes", async () => {
    const fake = createFakeHost({ throwOnInstall: true });
    const controller = createShutdownController({ host: fake.host });
    assert.equal(fake.logs.length, 1);
    assert.equal(fake.logs[0]!.level, "error");
    assert.ok(fake.logs[0]!.error instanceof Error);
    fake.clock.advance(3_600_000);
    assert.equal(await settledYet(controller.stopped), undefined);
    controller.dispose();
    // A manual stop still works: the embedding code can always stop it.
    controller.shutdown("operator");
    assert.equal((await controller.stopped).reason, "operator");
  });

  test("shutdown controller: dispose uninstalls the signal handlers and is idempotent", () => {
    const fake = createFakeHost();
    const controller = createShutdownController({ host: fake.host });
    controller.dispose();
    controller.dispose();
    assert.deepEqual(fake.installed(), []);
    assert.equal(fake.signal("SIGTERM"), false);
    assert.equal(controller.signal.aborted, false);
  });

  test("shutdown controller: joined tasks get the signal, are counted until they settle, and a failure is logged", async () => {
    const logs: LogRecord[] = [];
    const controller = createShutdownController({ log: (r) => void logs.push(r), clock: createManualClock() });
    let seen: AbortSignal | undefined;
    const stopsOnSignal = controller.join(
      (signal) => new Promise((resolve) => (seen = signal, signal.addEventListener("abort", () => resolve("stopped")))),
    );
    const failing = controller.join(Promise.reject(new Error("task broke")));
    assert.equal(seen, controller.signal);
    assert.equal(controller.pendingJoins, 2);
    assert.equal(await failing, undefined);
    assert.equal(controller.pendingJoins, 1);
    assert.equal(logs.filter((r) => r.msg === "background task failed").length, 1);
    let idle = false;
    void controller.joined().then(() => (idle = true));
    await flushMicrotasks();
    assert.equal(idle, false);
    controller.shutdown("done");
    assert.equal(await stopsOnSignal, "stopped");
    await flushMicrotasks();
    assert.equal(idle, true);
    assert.equal(controller.pendingJoins, 0);
  });

  test("shutdown controller: a task function that throws synchronously is logged, not thrown", async () => {
    const logs: LogRecord[] = [];
    const controller = createShutdownController({ log: (r) => void logs.push(r) });
    const joined = controller.join(() => {
      throw new Error("sync");
    });
    assert.equal(await joined, undefined);
    assert.equal(controller.pendingJoins, 0);
    assert.equal(logs.length, 1);
  });

  test("shutdown controller: bad options throw up front", () => {
    assert.throws(() => createShutdownController({ mode: "signals" }), TypeError);
    assert.throws(
      () => createShutdownController({ mode: "later" as never }),
      { name: "RangeError", message: /"mode" must be "manual" or "signals": current value is "later"/ },
    );
    assert.throws(() => createShutdownController(42 as never), TypeError);
  });
});
