import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { isServeError, ServeError } from "../../../src/core/lifecycle/serve_error.ts";
import { HygieneError, isHygieneError } from "../../../src/core/errors.ts";

describe("serve error", () => {
  test("serve error: each kind has its own stable code and keeps the cause", () => {
    const cause = new Error("EADDRINUSE");
    const io = new ServeError("io", cause);
    assert.equal(io.kind, "io");
    assert.equal(io.code, "SERVE_IO");
    assert.equal(io.cause, cause);
    assert.equal(io.name, "ServeError");
    assert.match(io.message, /EADDRINUSE/);
    const flush = new ServeError("flush", "not an Error", { outcome: "forced", stillRunning: 1, drainedAt: 5, joinsPending: 0 });
    assert.equal(flush.code, "SERVE_FLUSH");
    assert.equal(flush.outcome?.outcome, "forced");
    assert.match(flush.message, /not an Error/);
  });

  test("serve error: is a HygieneError, and the guard matches both codes and nothing else", () => {
    assert.ok(new ServeError("io", null) instanceof HygieneError);
    assert.ok(isHygieneError(new ServeError("flush", null)));
    assert.ok(isServeError(new ServeError("io", null)));
    assert.ok(isServeError(new ServeError("flush", null)));
    assert.equal(isServeError(new HygieneError("OTHER", "x")), false);
    assert.equal(isServeError(new Error("x")), false);
    assert.equal(isServeError(undefined), false);
  });

  test("serve error: the guard holds across copies of the package (brand, not instanceof)", () => {
    // What the other copy's class sets: its brand, its code and its kind.
    const foreign = Object.assign(new Error("x"), { code: "SERVE_FLUSH", kind: "flush", [Symbol.for("serve-hygiene.error")]: true });
    assert.ok(isServeError(foreign));
  });
});
