import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { createKeyedGates } from "../../../src/core/limits/keyed_gates.ts";
import { createManualClock } from "../../../src/testing/manual_clock.ts";

const peer = { address: "10.0.0.1" };
const req = () => new Request("http://localhost/");

describe("keyed gates", () => {
  test("keyed gates: without a shed wait the in-flight check answers synchronously, slot or refusal", () => {
    const gates = createKeyedGates({ inFlightPerKey: { perKey: 1 } }, () => {})!;
    const first = gates.check(req(), peer, 0);
    assert.ok(!(first instanceof Promise) && first.ok && first.slot !== undefined);
    const second = gates.check(req(), peer, 0);
    assert.ok(!(second instanceof Promise) && !second.ok && second.response?.status === 429);
    first.slot!.release();
  });

  test("keyed gates: with a shed wait, a request that finds its slot free is still answered synchronously", () => {
    const clock = createManualClock();
    const gates = createKeyedGates({ inFlightPerKey: { perKey: 1, shedWaitMs: 100, clock } }, () => {})!;
    const first = gates.check(req(), peer, 0);
    assert.ok(!(first instanceof Promise), "only a request that has to wait takes the Promise path");
    assert.ok(first.ok);
    const second = gates.check(req(), peer, 0);
    assert.ok(second instanceof Promise, "over its key's cap: it waits");
    first.slot!.release();
    return second.then((v) => {
      assert.ok(v.ok);
      v.slot!.release();
    });
  });
});
