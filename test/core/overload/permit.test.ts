import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { _Permit, _Waiting, type _Owner, type AbortSignalLike, type Permit, type Refusal } from "../../../src/core/overload/permit.ts";
import { _WaitQueue } from "../../../src/core/overload/_wait_queue.ts";
import { createManualClock } from "../../../src/testing/manual_clock.ts";

// What a permit and a waiter report back to their limit, recorded.
function owner() {
  const released: (string | number)[] = [];
  const refused = (reason: Refusal["reason"]): Refusal => ({ ok: false, reason, retryAfterMs: 1000 });
  const o: _Owner = {
    release: (sampled) => void released.push(sampled === undefined ? "release" : sampled.at),
    releaseOver: () => void released.push("over"),
    refusals: { "queue-timeout": refused("queue-timeout"), aborted: refused("aborted") },
    queue: new _WaitQueue(createManualClock(), 1000, 100, () => {}, Infinity, false),
  };
  return { o, released };
}

// An abort signal that records its listeners.
function signal(): AbortSignalLike & { listeners: Set<() => void>; fire(): void } {
  const listeners = new Set<() => void>();
  return {
    aborted: false,
    listeners,
    addEventListener: (_type, fn) => void listeners.add(fn),
    removeEventListener: (_type, fn) => void listeners.delete(fn),
    fire: () => [...listeners].forEach((fn) => fn()),
  };
}

describe("permit", () => {
  test("permit: released once whichever way; complete() reports itself as the sample, release() and dispose none", () => {
    const { o, released } = owner();
    const completed = new _Permit(o.release, 42);
    completed.complete();
    completed.complete();
    completed.release();
    const plain = new _Permit(o.release, 7);
    plain.release();
    plain.complete();
    const disposed = new _Permit(o.release, 9);
    disposed[Symbol.dispose]();
    disposed.release();
    assert.deepEqual(released, [42, "release", "release"]);
  });

  test("permit: a waiter settles once, with a permit whose release goes over the limit or not, or with the refusal", () => {
    const { o, released } = owner();
    const outcomes: { ctx: unknown; p: Permit | Refusal }[] = [];
    const done = (ctx: unknown, p: Permit | Refusal) => void outcomes.push({ ctx, p });
    const normal = new _Waiting(0, o, "a", done);
    normal.settle(5);
    normal.settle("queue-timeout");
    const over = new _Waiting(0, o, "b", done);
    over.settle(6, true);
    const late = new _Waiting(0, o, "c", done);
    late.settle("queue-timeout");
    assert.deepEqual(outcomes.map((x) => x.ctx), ["a", "b", "c"]);
    assert.equal(outcomes[2]!.p, o.refusals["queue-timeout"]);
    const [first, second] = outcomes.map((x) => x.p as Permit);
    first!.release();
    second!.release();
    assert.deepEqual(released, ["release", "over"]);
  });

  test("permit: a waiter's signal refuses it once, takes it out of the queue, and detach() takes the listener off", () => {
    const { o } = owner();
    const outcomes: (Permit | Refusal)[] = [];
    const w = new _Waiting(0, o, undefined, (_ctx, p) => void outcomes.push(p));
    const s = signal();
    o.queue.push(w);
    w.listen(s);
    assert.equal(s.listeners.size, 1);
    s.fire();
    s.fire();
    assert.equal(outcomes.length, 1);
    assert.equal(outcomes[0], o.refusals.aborted);
    assert.equal(o.queue.length, 0);
    // The queue detached it as it left: nothing listens any more.
    assert.equal(s.listeners.size, 0);

    const kept = new _Waiting(0, o, undefined, () => assert.fail("a detached waiter's signal is not listened to"));
    const t = signal();
    kept.listen(t);
    kept.detach();
    assert.equal(t.listeners.size, 0);
    kept.detach();
  });
});
