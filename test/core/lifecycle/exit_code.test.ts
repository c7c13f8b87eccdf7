import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { EXIT_CODES, exitCodeFor } from "../../../src/core/lifecycle/exit_code.ts";
import { ServeError } from "../../../src/core/lifecycle/serve_error.ts";

describe("exit code", () => {
  test("exit code: clean 0, forced 3, io 1, flush 4, anything else 1", () => {
    assert.equal(exitCodeFor({ outcome: "clean", stillRunning: 0, drainedAt: 0, joinsPending: 0 }), 0);
    assert.equal(exitCodeFor({ outcome: "forced", stillRunning: 2, drainedAt: 0, joinsPending: 0 }), 3);
    assert.equal(exitCodeFor(new ServeError("io", new Error("x"))), 1);
    assert.equal(exitCodeFor(new ServeError("flush", new Error("x"))), 4);
    assert.equal(exitCodeFor(new Error("unexpected")), 1);
    assert.equal(exitCodeFor(undefined), 1);
    assert.deepEqual(EXIT_CODES, { clean: 0, io: 1, forced: 3, flush: 4 });
    assert.ok(Object.isFrozen(EXIT_CODES));
  });

  test("exit code: a flush failure after a forced drain still exits 4 (the flush is what lost data)", () => {
    const error = new ServeError("flush", new Error("x"), { outcome: "forced", stillRunning: 1, drainedAt: 0, joinsPending: 0 });
    assert.equal(exitCodeFor(error), 4);
  });
});
