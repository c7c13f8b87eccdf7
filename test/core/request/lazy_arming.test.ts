// Deadlines armed lazily (src/core/request/_lazy_arming.ts): a handler that turned asynchronous
// is armed only if it still runs at the next arming tick, from its arrival; one past its
// deadline by then is answered 408 in that tick. Seen through the guard, with the manual clock:
// its timers are the arming tick and, once something is armed, the deadline wheel's.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { createGuard } from "../../../src/core/guard.ts";
import { createManualClock } from "../../../src/testing/manual_clock.ts";
import { ARMING_TICK_MS } from "../../../src/core/request/_lazy_arming.ts";
import { flushMicrotasks } from "../../support/flush.ts";

const GET = () => new Request("http://localhost/");

function setup(requestTimeoutMs: number) {
  const clock = createManualClock();
  const guard = createGuard({ clock, requestTimeoutMs, loadMonitor: false, concurrencyLimit: 64 });
  const gates: (() => void)[] = [];
  const fetch = guard.wrap(() => new Promise<Response>((resolve) => gates.push(() => resolve(new Response("ok")))));
  return { clock, guard, gates, fetch };
}

describe("lazy deadline arming", () => {
  test("a handler that settles before the next tick arms nothing: no wheel timer, and the arming tick stops once none runs", async () => {
    const { clock, guard, gates, fetch } = setup(1000);
    assert.equal(clock.pendingTimers, 0);
    const answers = [fetch(GET()), fetch(GET()), fetch(GET())];
    await flushMicrotasks();
    assert.equal(clock.pendingTimers, 1, "one arming tick for every running handler, not a timer each");
    for (const open of gates) open();
    for (const res of await Promise.all(answers)) assert.equal(res.status, 200);
    clock.advance(ARMING_TICK_MS);
    assert.equal(clock.pendingTimers, 0, "nothing was armed, and the tick stopped: an idle guard holds no timer");
    guard.dispose();
  });

  test("a handler still running at the tick is armed from its arrival: 408 at its deadline, not a tick later", async () => {
    const { clock, guard, gates, fetch } = setup(100);
    clock.advance(3); // off the tick's phase
    const late = fetch(GET());
    await flushMicrotasks();
    clock.advance(ARMING_TICK_MS);
    assert.equal(clock.pendingTimers, 2, "armed: the arming tick and the deadline wheel");
    const answered: Response[] = [];
    void late.then((res) => answered.push(res));
    clock.advance(100 - ARMING_TICK_MS - 1);
    await flushMicrotasks();
    assert.equal(answered.length, 0, "not before its deadline (arrival + 100 ms)");
    clock.advance(20); // within the wheel's tick of the deadline
    await flushMicrotasks();
    assert.equal(answered[0]?.status, 408);
    gates[0]!();
    await flushMicrotasks();
    assert.equal(guard.inFlight, 0);
    clock.advance(2 * ARMING_TICK_MS);
    assert.equal(clock.pendingTimers, 0, "the ticks stop once nothing runs and nothing is armed");
    guard.dispose();
  });

  test("a deadline shorter than the tick fires in the arming tick itself; handlers that joined in different ticks are each armed once", async () => {
    const { clock, guard, fetch } = setup(4);
    const short = fetch(GET());
    await flushMicrotasks();
    clock.advance(ARMING_TICK_MS);
    await flushMicrotasks();
    assert.equal((await short).status, 408, "already past its deadline at the tick: answered there");
    guard.dispose();

    const long = setup(35);
    const first = long.fetch(GET());
    await flushMicrotasks();
    long.clock.advance(ARMING_TICK_MS); // the first is armed (due at 35)
    const second = long.fetch(GET()); // joins at 10: due at 45
    await flushMicrotasks();
    const order: string[] = [];
    void first.then((r) => order.push(`first ${r.status}`));
    void second.then((r) => order.push(`second ${r.status}`));
    long.clock.advance(30); // 40: the first's deadline (35) passed, the second's (45) not
    await flushMicrotasks();
    assert.deepEqual(order, ["first 408"]);
    long.clock.advance(20);
    await flushMicrotasks();
    assert.deepEqual(order, ["first 408", "second 408"]);
    long.guard.dispose();
  });

  test("a handler that armed its own shorter deadline before turning asynchronous is left to the wheel: one 408, one deny event", async () => {
    const clock = createManualClock();
    const denied: string[] = [];
    const guard = createGuard({ clock, requestTimeoutMs: 1000, loadMonitor: false, concurrencyLimit: 64, onDeny: (e) => denied.push(e.layer) });
    const fetch = guard.wrap((request, info) => {
      if (request.url.endsWith("/short")) info.context.timeoutMs = 4; // armed in the wheel now, due before the first arming tick
      return new Promise<Response>(() => {});
    });
    void fetch(GET()); // the arming tick runs already (its timer comes before the wheel's)
    await flushMicrotasks();
    const answer = fetch(new Request("http://localhost/short"));
    await flushMicrotasks();
    clock.advance(4 * ARMING_TICK_MS);
    await flushMicrotasks();
    assert.equal((await answer).status, 408);
    assert.deepEqual(denied, ["timeout"], "answered once, by whichever of the tick and the wheel came first");
    guard.dispose();
  });
});
