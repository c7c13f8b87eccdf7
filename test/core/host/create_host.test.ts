import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { createHost } from "../../../src/core/host/create_host.ts";
import type { LogRecord, ShutdownSignal } from "../../../src/core/host/host.ts";
import type { SignalApi } from "../../../src/core/host/signals.ts";

function fakeSignals(failing: ShutdownSignal[] = []) {
  const handlers = new Map<ShutdownSignal, () => void>();
  const api: SignalApi = {
    add(signal, handler) {
      if (failing.includes(signal)) throw new Error(`cannot listen for ${signal}`);
      handlers.set(signal, handler);
    },
    remove(signal, handler) {
      if (handlers.get(signal) === handler) handlers.delete(signal);
    },
  };
  return { api, handlers };
}

describe("createHost", () => {
  test("createHost: the runtime's readings and process controls are the Host's", () => {
    const exits: string[] = [];
    const host = createHost({
      rss: () => 42,
      liveBytes: () => 7,
      collectGarbage: () => void exits.push("gc"),
      exit: (code) => void exits.push(`exit ${code}`),
      setExitCode: (code) => void exits.push(`code ${code}`),
    });
    assert.equal(host.rss(), 42);
    assert.equal(host.liveBytes?.(), 7);
    host.collectGarbage?.();
    host.setExitCode?.(1);
    host.exit?.(2);
    assert.deepEqual(exits, ["gc", "code 1", "exit 2"]);
    assert.equal(typeof host.log, "function");
    assert.equal(typeof host.clock.now(), "number");
  });

  test("createHost: what the runtime lacks the Host lacks: no RSS reads undefined, optional readings are absent", () => {
    const host = createHost();
    assert.equal(host.rss(), undefined);
    for (const member of ["liveBytes", "collectGarbage", "exit", "setExitCode"] as const) {
      assert.equal(member in host, false, member);
    }
    // No signal API: nothing to install, nothing fires, the uninstaller is harmless.
    const uninstall = host.onShutdownSignal(() => assert.fail("must not fire"));
    uninstall();
  });

  test("createHost: SIGTERM and SIGINT are installed through the runtime's API, reach the listener, and are uninstalled", () => {
    const { api, handlers } = fakeSignals();
    const host = createHost({ signals: api, log: () => assert.fail("nothing to log") });
    const got: ShutdownSignal[] = [];
    const uninstall = host.onShutdownSignal((signal) => got.push(signal));
    assert.deepEqual([...handlers.keys()], ["SIGTERM", "SIGINT"]);
    handlers.get("SIGTERM")!();
    handlers.get("SIGINT")!();
    assert.deepEqual(got, ["SIGTERM", "SIGINT"]);
    uninstall();
    assert.equal(handlers.size, 0);
  });

  test("createHost: a signal whose install fails is logged to the Host's log and never fires a shutdown", () => {
    const { api, handlers } = fakeSignals(["SIGTERM"]);
    const logs: LogRecord[] = [];
    const host = createHost({ signals: api, log: (record) => logs.push(record) });
    const got: ShutdownSignal[] = [];
    const uninstall = host.onShutdownSignal((signal) => got.push(signal));
    assert.deepEqual([...handlers.keys()], ["SIGINT"]);
    assert.equal(logs.length, 1);
    assert.equal(logs[0]!.level, "error");
    assert.equal(logs[0]!.msg, "signal handler install failed");
    assert.equal(logs[0]!.signal, "SIGTERM");
    assert.deepEqual(got, []);
    uninstall();
    assert.equal(handlers.size, 0);
  });

  test("createHost: unref'd timers go through the runtime's unref; others do not", () => {
    const unrefd: unknown[] = [];
    const host = createHost({ unref: (id) => void unrefd.push(id) });
    const kept = host.clock.setTimeout(() => {}, 60_000);
    const sampler = host.clock.setInterval(() => {}, 60_000, { unref: true });
    kept.cancel();
    sampler.cancel();
    assert.equal(unrefd.length, 1);
  });

  test("createHost: the runtime's setImmediate becomes the clock's, cancellable; without it the clock has none", () => {
    const scheduled: (() => void)[] = [];
    const cleared: unknown[] = [];
    const host = createHost({
      setImmediate: (fn) => scheduled.push(fn) - 1,
      clearImmediate: (id: never) => void cleared.push(id),
    });
    let ran = 0;
    const handle = host.clock.setImmediate!(() => void ran++);
    assert.equal(scheduled.length, 1);
    scheduled[0]!();
    assert.equal(ran, 1);
    handle.cancel();
    assert.deepEqual(cleared, [0]);
    assert.equal(createHost({}).clock.setImmediate, undefined);
    assert.throws(() => createHost({ setImmediate: () => 0 }), {
      name: "TypeError",
      message: 'Cannot create host as "setImmediate" and "clearImmediate" go together: only one was given',
    });
  });

  test("createHost: options are validated up front", () => {
    assert.throws(() => createHost(5 as never), { name: "TypeError", message: "Cannot create host as the options must be an object: current value is 5" });
    for (const field of ["rss", "liveBytes", "collectGarbage", "exit", "setExitCode", "unref", "setImmediate", "clearImmediate", "log"]) {
      assert.throws(() => createHost({ [field]: 1 }), {
        name: "TypeError",
        message: `Cannot create host as "${field}" must be a function: current value is 1`,
      });
    }
    assert.throws(() => createHost({ signals: "SIGTERM" as never }), {
      name: "TypeError",
      message: 'Cannot create host as "signals" must be an object: current value is "SIGTERM"',
    });
    assert.throws(() => createHost({ signals: { add: () => {} } as never }), {
      name: "TypeError",
      message: 'Cannot create host as "signals.remove" must be a function: current value is undefined',
    });
    assert.throws(() => createHost({ rss: null as never }), { name: "TypeError", message: 'Cannot create host as "rss" must be a function: current value is null' });
  });
});
