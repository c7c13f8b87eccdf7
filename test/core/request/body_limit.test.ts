import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { BodyTooLargeError, declaredLength, isBodyTooLargeError, limitBody } from "../../../src/core/request/body_limit.ts";
import { isHygieneError } from "../../../src/core/errors.ts";
import { countingBody } from "../../support/bodies.ts";
import fc from "fast-check";

describe("body limit", () => {
  test("body limit: declared lengths — plain digits pass, everything else is malformed", () => {
    const h = (v: string) => declaredLength(new Headers({ "content-length": v }));
    assert.deepEqual(h("0"), { kind: "length", bytes: 0 });
    assert.deepEqual(h("42"), { kind: "length", bytes: 42 });
    assert.deepEqual(h("7, 7"), { kind: "length", bytes: 7 });
    for (const bad of ["abc", "-1", "", "1e3", "99999999999999999999", "9007199254740992", "5, 6", "+5", "0x10", "1.5", "5,"]) {
      assert.equal(h(bad).kind, "malformed", bad);
    }
    assert.equal(declaredLength(new Headers()).kind, "unknown");
    assert.equal(declaredLength(new Headers({ "content-length": "5", "transfer-encoding": "chunked" })).kind, "unknown");
  });

  test("body limit: no header value makes the parser throw", () => {
    fc.assert(
      fc.property(fc.string(), (value) => {
        let headers: Headers;
        try {
          headers = new Headers({ "content-length": value });
        } catch {
          return; // not a legal header value at all: the runtime rejects it before we see it
        }
        assert.ok(["unknown", "length", "malformed"].includes(declaredLength(headers).kind));
      }),
    );
  });

  test("body limit: the chunk that would pass the cap is never handed on and the source is cancelled", async () => {
    const source = countingBody(10, 4);
    const seen: number[] = [];
    let overflow: BodyTooLargeError | undefined;
    const reader = limitBody(source.stream, { limit: () => 10, onOverflow: (e) => (overflow = e) }).getReader();
    let error: unknown;
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        seen.push(value.byteLength);
      }
    } catch (e) {
      error = e;
    }
    assert.deepEqual(seen, [4, 4], "8 bytes handed on; the third chunk would make 12 > 10");
    assert.ok(isBodyTooLargeError(error));
    assert.equal(overflow, error);
    assert.equal((error as BodyTooLargeError).limit, 10);
    assert.equal((error as BodyTooLargeError).code, "BODY_TOO_LARGE");
    assert.ok(isHygieneError(error));
    assert.equal(source.cancelled, true);
    assert.equal(source.pulls, 3);
  });

  test("body limit: a declared length over the cap fails the first read without reading the source", async () => {
    const source = countingBody(10, 4);
    let firstRead = false;
    const limited = limitBody(source.stream, { limit: () => 10, declared: { kind: "length", bytes: 40 }, onFirstRead: () => (firstRead = true) });
    const error = await limited.getReader().read().catch((e: unknown) => e);
    assert.ok(isBodyTooLargeError(error));
    assert.deepEqual([source.pulls, firstRead, source.cancelled], [0, false, true]);
  });

  test("body limit: nothing is read before the consumer asks (no read-ahead)", async () => {
    const source = countingBody(10, 4);
    const limited = limitBody(source.stream, { limit: () => 100 });
    await Promise.resolve();
    assert.equal(source.pulls, 0);
    const reader = limited.getReader();
    await reader.read();
    assert.ok(source.pulls <= 2, `pulled ${source.pulls}`);
    await reader.cancel();
    assert.equal(source.cancelled, true);
  });

  test("body limit: the cap is read when the body is first read", async () => {
    let cap = 1;
    const limited = limitBody(countingBody(2, 5).stream, { limit: () => cap });
    cap = 100;
    assert.equal((await new Response(limited).arrayBuffer()).byteLength, 10);
  });

  test("body limit: the brand survives a second copy of the class", () => {
    // What the other copy's class sets: its brand, its code and its limit.
    const foreign = Object.assign(new Error("x"), { code: "BODY_TOO_LARGE", limit: 10, [Symbol.for("serve-hygiene.error")]: true });
    assert.equal(isBodyTooLargeError(foreign), true);
    assert.equal(isBodyTooLargeError(new Error("BODY_TOO_LARGE")), false);
  });
});
