import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { createConnectionGate } from "../../../src/core/overload/connection_gate.ts";
import type { HygieneEvent } from "../../../src/core/events.ts";

describe("connection gate", () => {
  test("connection gate: below the cap every connection is counted; a closed one frees its place once", () => {
    const gate = createConnectionGate({ maxConnections: 2 });
    const a = gate.accept(() => {})!;
    gate.accept(() => {});
    assert.equal(gate.open, 2);
    assert.equal(gate.idle, 2, "silent since connect counts as idle");
    a.closed();
    a.closed();
    assert.equal(gate.open, 1);
  });

  test("connection gate: at the cap with every connection busy the newcomer is refused with a deny event of layer connection", () => {
    const events: HygieneEvent[] = [];
    const denies: unknown[] = [];
    const gate = createConnectionGate({ maxConnections: 1, onEvent: (e) => events.push(e), onDeny: (e) => denies.push(e) });
    gate.accept(() => assert.fail("a busy connection was closed"))!.requestStarted();
    assert.equal(gate.accept(() => {}), undefined);
    const want = { type: "deny", layer: "connection", reason: "over-cap", status: 503, retryAfterMs: 1000 };
    assert.deepEqual(events, [want]);
    assert.deepEqual(denies, [want]);
    assert.equal(gate.open, 1);
  });

  test("connection gate: at the cap the oldest idle connection gives way, and is counted free at once", () => {
    const closed: string[] = [];
    const events: HygieneEvent[] = [];
    const gate = createConnectionGate({ maxConnections: 3, onEvent: (e) => events.push(e) });
    const a = gate.accept(() => closed.push("a"))!;
    const b = gate.accept(() => closed.push("b"))!;
    const c = gate.accept(() => closed.push("c"))!;
    a.requestStarted(); // busy: never evicted
    b.requestStarted();
    b.requestEnded(); // idle again, after c (silent since connect)
    assert.ok(gate.accept(() => closed.push("d")));
    assert.deepEqual(closed, ["c"], "the oldest idle one goes first");
    c.closed(); // the transport's close, later: no double count
    assert.equal(gate.open, 3);
    assert.ok(gate.accept(() => {}));
    assert.deepEqual(closed, ["c", "b"]);
    assert.deepEqual(events, [], "giving way is not a refusal");
  });

  test("connection gate: a connection with pipelined requests is idle only when the last one ended", () => {
    const closed: string[] = [];
    const gate = createConnectionGate({ maxConnections: 1 });
    const a = gate.accept(() => closed.push("a"))!;
    a.requestStarted();
    a.requestStarted();
    a.requestEnded();
    assert.equal(gate.accept(() => {}), undefined, "still busy with the second request");
    a.requestEnded();
    a.requestEnded(); // an extra end never makes the count negative
    assert.equal(gate.idle, 1);
    assert.ok(gate.accept(() => {}));
    assert.deepEqual(closed, ["a"]);
  });

  test("connection gate: Infinity counts and never refuses; a bad cap is a RangeError naming the field", () => {
    const gate = createConnectionGate({ maxConnections: Infinity });
    for (let i = 0; i < 100; i++) gate.accept(() => assert.fail("evicted"))!.requestStarted();
    assert.equal(gate.open, 100);
    assert.throws(() => createConnectionGate({ maxConnections: 0 }), {
      name: "RangeError",
      message: 'Cannot create connection gate as "maxConnections" must be a positive integer or Infinity: current value is 0',
    });
  });
});
