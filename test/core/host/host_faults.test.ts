// A Host whose primitives throw (an embedder's own, built with createHost): each failure is
// logged, and the guard and the drain go on (a review: a throwing unref failed every request and
// multiplied the deadline wheel's intervals, a throwing signal remove replaced the drain's
// outcome, a throwing setExitCode was an unhandled rejection that kept the IPC channel).
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { createHost } from "../../../src/core/host/create_host.ts";
import type { LogRecord } from "../../../src/core/host/host.ts";
import { createGuard, serveWith } from "../../../src/core/mod.ts";
import { createFakeServer } from "../../support/fake_server.ts";

const boom = (what: string) => () => {
  throw new Error(`${what} failed`);
};
const msgs = (logs: LogRecord[]) => logs.map((l) => l.msg);

describe("host faults", { timeout: 10_000 }, () => {
  test("host faults: an unref that throws is logged once; the guard answers, its timers cancellable", async () => {
    const logs: LogRecord[] = [];
    const host = createHost({ unref: boom("unref"), log: (r) => void logs.push(r), rss: () => 1_000_000 });
    const guard = createGuard({ loadMonitor: false, memory: { ceilingBytes: 1 << 30 } }, host);
    for (let i = 0; i < 3; i++) {
      const res = await guard.wrap(async () => new Response("ok"))(new Request("http://localhost/"));
      assert.equal(res.status, 200);
    }
    guard.dispose();
    assert.deepEqual(msgs(logs), ["timer unref failed"]);
  });

  test("host faults: a setImmediate that throws is logged once, and a 0 ms timer stands in (cancellable)", async () => {
    const logs: LogRecord[] = [];
    const host = createHost({ setImmediate: boom("setImmediate"), clearImmediate: () => {}, log: (r) => void logs.push(r) });
    const ran: string[] = [];
    host.clock.setImmediate!(() => ran.push("first"));
    host.clock.setImmediate!(() => ran.push("cancelled")).cancel();
    host.clock.setImmediate!(() => ran.push("third"));
    await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(ran, ["first", "third"]);
    assert.deepEqual(msgs(logs), ["setImmediate failed; a 0 ms timer stands in"]);
    // A clearImmediate that throws: logged once, the cancel itself does not throw (a diff review).
    const clearing: LogRecord[] = [];
    const other = createHost({ setImmediate: (fn) => setTimeout(fn, 0), clearImmediate: boom("clearImmediate"), log: (r) => void clearing.push(r) });
    other.clock.setImmediate!(() => {}).cancel();
    other.clock.setImmediate!(() => {}).cancel();
    assert.deepEqual(msgs(clearing), ["clearImmediate failed"]);
  });

  test("host faults: signal removes, setExitCode and exit that throw are logged; the drain's outcome stands and the IPC channel is let go", async () => {
    const logs: LogRecord[] = [];
    const unhandled: unknown[] = [];
    const onUnhandled = (e: unknown) => void unhandled.push(e);
    process.on("unhandledRejection", onUnhandled);
    let channelRefs = 0;
    try {
      const host = createHost({
        log: (r) => void logs.push(r),
        signals: { add: () => {}, remove: boom("remove") },
        setExitCode: boom("setExitCode"),
        exit: boom("exit"),
        ipcChannel: () => ({ ref: () => void channelRefs++, unref: () => void channelRefs-- }),
      });
      // A flush hook that fails: exit code 4, which setExitCode refuses.
      const handle = await serveWith(host, () => createFakeServer(), () => new Response("ok"), { loadMonitor: false, exitOnDrained: true, onDrained: boom("flush"), log: (r) => void logs.push(r) });
      assert.equal(channelRefs, 1);
      await assert.rejects(handle.shutdown("test"), (e: unknown) => (e as { kind?: string }).kind === "flush", "the drain's own failure, not a remove's");
      await new Promise((r) => setTimeout(r, 20)); // exitOnDrained's macrotask
      assert.equal(channelRefs, 0, "the channel was let go");
      const seen = msgs(logs);
      assert.equal(seen.filter((m) => m === "signal handler removal failed").length, 2, JSON.stringify(seen));
      assert.ok(seen.includes("set exit code failed") && seen.includes("exit failed"), JSON.stringify(seen));
      assert.deepEqual(unhandled, []);
    } finally {
      process.off("unhandledRejection", onUnhandled);
    }
  });
});
