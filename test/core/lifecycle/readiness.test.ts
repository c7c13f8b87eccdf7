import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { createHealth } from "../../../src/core/lifecycle/readiness.ts";
import { createShutdownController } from "../../../src/core/lifecycle/shutdown_controller.ts";
import { runUntilDrained } from "../../../src/core/lifecycle/drain.ts";
import { createFakeHost } from "../../support/fake_host.ts";
import { createFakeServer } from "../../support/fake_server.ts";
import { flushMicrotasks } from "../../support/flush.ts";

describe("readiness", () => {
  test("readiness: not ready at the very instant of the signal, liveness stays ok", () => {
    const fake = createFakeHost();
    const controller = createShutdownController({ host: fake.host });
    const health = createHealth({ controller });
    assert.deepEqual(health.ready(), { ok: true });
    fake.signal("SIGTERM");
    // No await: the same tick the signal arrived.
    assert.deepEqual(health.ready(), { ok: false, reason: "draining" });
    assert.deepEqual(health.live(), { ok: true });
  });

  test("readiness: not ready while the memory ceiling is shedding, ready again when it clears", () => {
    const memory = { shedding: false };
    const health = createHealth({ memory });
    assert.equal(health.ready().ok, true);
    memory.shedding = true;
    assert.deepEqual(health.ready(), { ok: false, reason: "memory" });
    assert.deepEqual(health.live(), { ok: true });
    memory.shedding = false;
    assert.equal(health.ready().ok, true);
  });

  test("readiness: draining wins over memory as the reason", () => {
    const controller = createShutdownController({ mode: "manual", log: () => {} });
    const health = createHealth({ controller, memory: { shedding: true } });
    controller.shutdown("stop");
    assert.equal(health.ready().reason, "draining");
  });

  test("readiness: a memory flag that throws reads as not shedding (fails open)", () => {
    const health = createHealth({
      memory: {
        get shedding(): boolean {
          throw new Error("sampler broken");
        },
      },
    });
    assert.equal(health.ready().ok, true);
  });

  test("readiness: without a controller or memory monitor it is always ready", () => {
    assert.deepEqual(createHealth().ready(), { ok: true });
  });

  test("readiness: readyz answers 200 then 503 with a generic, uncached body; healthz stays 200", async () => {
    const controller = createShutdownController({ mode: "manual", log: () => {} });
    const health = createHealth({ controller, memory: { shedding: false } });
    const before = health.readyz();
    assert.equal(before.status, 200);
    assert.equal(before.headers.get("cache-control"), "no-store");
    assert.equal(await before.text(), "ok\n");
    controller.shutdown("stop");
    const after = health.readyz();
    assert.equal(after.status, 503);
    assert.equal(after.headers.get("cache-control"), "no-store");
    const body = await after.text();
    assert.equal(body, "not ready\n");
    assert.doesNotMatch(body, /drain|memory/);
    const live = health.healthz();
    assert.equal(live.status, 200);
    assert.equal(live.headers.get("cache-control"), "no-store");
  });

  test("readiness: fails through the pre-stop delay while the server still accepts", async () => {
    const fake = createFakeHost();
    const controller = createShutdownController({ host: fake.host });
    const server = createFakeServer();
    const health = createHealth({ controller });
    void runUntilDrained(server, controller, { drainTimeoutMs: 10_000, preStopDelayMs: 3_000 });
    fake.signal("SIGTERM");
    await flushMicrotasks();
    fake.clock.advance(2_000);
    await flushMicrotasks();
    assert.equal(server.stopAcceptingCalls, 0);
    assert.equal(health.readyz().status, 503);
    fake.clock.advance(1_000);
    await flushMicrotasks();
    assert.equal(server.stopAcceptingCalls, 1);
  });

  test("readiness: bad options throw up front", () => {
    assert.throws(() => createHealth("yes" as never), TypeError);
  });
});
