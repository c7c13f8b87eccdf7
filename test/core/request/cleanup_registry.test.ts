import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { createCleanupRegistry } from "../../../src/core/request/cleanup_registry.ts";
import type { LogRecord } from "../../../src/core/host/host.ts";
import { flushMicrotasks } from "../../support/flush.ts";

function logged() {
  const logs: LogRecord[] = [];
  return { logs, log: (r: LogRecord) => void logs.push(r) };
}

describe("cleanup registry", () => {
  test("cleanup registry: abandon runs every cleanup once with the reason, newest first", () => {
    const { log } = logged();
    const r = createCleanupRegistry(log);
    const ran: string[] = [];
    r.add((why) => void ran.push(`a:${why}`));
    r.add((why) => void ran.push(`b:${why}`));
    assert.equal(r.abandoned, false);
    r.abandon("client disconnect");
    assert.deepEqual(ran, ["b:client disconnect", "a:client disconnect"]);
    assert.equal(r.abandoned, true);
  });

  test("cleanup registry: exactly once when two causes abandon the same request (timeout, then forced drain)", () => {
    const r = createCleanupRegistry(logged().log);
    let runs = 0;
    let reason: unknown;
    r.add((why) => {
      runs++;
      reason = why;
    });
    r.abandon("timeout");
    r.abandon("forced drain");
    assert.equal(runs, 1);
    assert.equal(reason, "timeout");
  });

  test("cleanup registry: after complete, abandon is a no-op and nothing runs", () => {
    const r = createCleanupRegistry(logged().log);
    let runs = 0;
    r.add(() => void runs++);
    r.complete();
    r.abandon("late disconnect");
    assert.equal(runs, 0);
    assert.equal(r.abandoned, false);
    r.add(() => void runs++);
    r.abandon("again");
    assert.equal(runs, 0, "a cleanup added after completion is dropped");
  });

  test("cleanup registry: complete after abandon changes nothing", () => {
    const r = createCleanupRegistry(logged().log);
    r.abandon("timeout");
    r.complete();
    assert.equal(r.abandoned, true);
  });

  test("cleanup registry: an unregistered cleanup does not run", () => {
    const r = createCleanupRegistry(logged().log);
    const ran: string[] = [];
    const same = () => void ran.push("same");
    const off1 = r.add(same);
    r.add(same);
    off1();
    off1();
    r.abandon("x");
    assert.deepEqual(ran, ["same"], "only the other registration of the same function ran");
  });

  test("cleanup registry: a cleanup added after abandon runs at once, once", () => {
    const r = createCleanupRegistry(logged().log);
    r.abandon("timeout");
    const got: unknown[] = [];
    r.add((why) => void got.push(why));
    assert.deepEqual(got, ["timeout"]);
    r.abandon("forced drain");
    assert.deepEqual(got, ["timeout"]);
  });

  test("cleanup registry: a throwing cleanup is logged and does not stop the others", () => {
    const { logs, log } = logged();
    const r = createCleanupRegistry(log);
    const ran: string[] = [];
    r.add(() => void ran.push("first"));
    r.add(() => {
      throw new Error("cleanup broke");
    });
    r.add(() => void ran.push("last"));
    assert.doesNotThrow(() => r.abandon("timeout"));
    assert.deepEqual(ran, ["last", "first"]);
    assert.equal(logs.length, 1);
    assert.equal(logs[0]!.level, "error");
    assert.equal(logs[0]!.msg, "abandon cleanup failed");
    assert.equal((logs[0]!.error as Error).message, "cleanup broke");
  });

  test("cleanup registry: a rejecting async cleanup is logged, never an unhandled rejection", async () => {
    const { logs, log } = logged();
    const r = createCleanupRegistry(log);
    let other = false;
    r.add(() => Promise.reject(new Error("async broke")));
    r.add(async () => {
      other = true;
    });
    r.abandon("forced drain");
    await flushMicrotasks();
    assert.equal(other, true);
    assert.equal(logs.length, 1);
    assert.equal((logs[0]!.error as Error).message, "async broke");
  });
});
