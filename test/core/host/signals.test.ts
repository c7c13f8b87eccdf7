import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { installShutdownSignals, SHUTDOWN_SIGNALS, type SignalApi } from "../../../src/core/host/signals.ts";
import type { LogRecord, ShutdownSignal } from "../../../src/core/host/host.ts";

function fakeApi(failing: ShutdownSignal[] = []) {
  const handlers = new Map<ShutdownSignal, () => void>();
  const api: SignalApi = {
    add(signal, handler) {
      if (failing.includes(signal)) throw new Error(`cannot listen for ${signal}`);
      handlers.set(signal, handler);
    },
    remove(signal) {
      handlers.delete(signal);
    },
  };
  return { api, handlers };
}

describe("signals", () => {
  test("signals: SIGTERM and SIGINT are installed and reach the listener by name", () => {
    const { api, handlers } = fakeApi();
    const got: string[] = [];
    const uninstall = installShutdownSignals(api, (s) => got.push(s), () => {});
    assert.deepEqual([...handlers.keys()], [...SHUTDOWN_SIGNALS]);
    handlers.get("SIGINT")!();
    handlers.get("SIGTERM")!();
    assert.deepEqual(got, ["SIGINT", "SIGTERM"]);
    uninstall();
    assert.equal(handlers.size, 0);
  });

  test("signals: an install that throws is logged, never fires, and the other still installs", () => {
    const { api, handlers } = fakeApi(["SIGINT"]);
    const logs: LogRecord[] = [];
    const got: string[] = [];
    installShutdownSignals(api, (s) => got.push(s), (r) => logs.push(r));
    assert.deepEqual([...handlers.keys()], ["SIGTERM"]);
    assert.equal(logs.length, 1);
    assert.equal(logs[0]!.level, "error");
    assert.equal(logs[0]!.signal, "SIGINT");
    assert.deepEqual(got, []);
  });

  test("signals: when every install fails nothing fires and nothing throws", () => {
    const { api, handlers } = fakeApi(["SIGINT", "SIGTERM"]);
    const logs: LogRecord[] = [];
    const uninstall = installShutdownSignals(api, () => assert.fail("must not fire"), (r) => logs.push(r));
    assert.equal(handlers.size, 0);
    assert.equal(logs.length, 2);
    uninstall();
  });
});
