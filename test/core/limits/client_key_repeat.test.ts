import { describe, test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { createClientKey } from "../../../src/core/limits/client_key.ts";

// A prepared key function remembers the last untrusted peer's key (a client sending request
// after request is parsed once): whatever the order of peers, each key is the one a fresh
// function gives.
describe("client key: repeated peers", () => {
  const peers = ["192.0.2.1", "10.0.0.2", "2001:db8:1:2::99", "::ffff:192.0.2.1", "garbage", "10.0.0.2", "192.0.2.1"];
  const headers = [undefined, "203.0.113.9", "203.0.113.9, 10.0.0.7", "unknown", ""];

  test("a sequence of peers (trusted and not, with and without a proxy header) keys as a fresh function would", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.constantFrom(...peers), fc.constantFrom(...headers)), { maxLength: 30 }), (seq) => {
        const key = createClientKey({ trustedProxies: ["10.0.0.0/8"] });
        for (const [address, xff] of seq) {
          const request = new Request("http://x/", xff === undefined ? {} : { headers: { "x-forwarded-for": xff } });
          const fresh = createClientKey({ trustedProxies: ["10.0.0.0/8"] })(request, { peer: { address } });
          assert.equal(key(request, { peer: { address } }), fresh, `${address} ${xff}`);
        }
      }),
      { numRuns: 200 },
    );
  });

  test("a peer after an unknown one keys by its own address", () => {
    const key = createClientKey();
    const r = new Request("http://x/");
    assert.equal(key(r, { peer: { address: "192.0.2.1" } }), "192.0.2.1");
    assert.equal(key(r, {}), "unknown");
    assert.equal(key(r, { peer: { address: "192.0.2.1" } }), "192.0.2.1");
    assert.equal(key(r, { peer: { address: "192.0.2.2" } }), "192.0.2.2");
  });
});
