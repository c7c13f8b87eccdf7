import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { EventEmitter } from "node:events";
import { _ClientLeft } from "../../../src/core/request/client_left.ts";

// A node-style response (its close event) and request (its socket), as the node adapter and
// hygiene() on @hono/node-server give them.
const parts = (destroyed = false) => ({ request: { socket: { destroyed } }, response: new EventEmitter() });

describe("client left", () => {
  test("client left: a waiter's listener goes on the response's close event as it is, and comes off with it", () => {
    const { request, response } = parts();
    const left = new _ClientLeft(request, response);
    let calls = 0;
    const listener = () => void calls++;
    left.addEventListener("abort", listener);
    // The listener itself, not a once-wrapper (node's once builds a bound function and its state a call).
    assert.deepEqual(response.rawListeners("close"), [listener]);
    response.emit("close");
    assert.equal(calls, 1);
    left.removeEventListener("abort", listener);
    assert.equal(response.listenerCount("close"), 0, "removed by the waiter as it leaves");
  });

  test("client left: a waiter that leaves first takes its listener off; the close then calls nobody", () => {
    const { request, response } = parts();
    const left = new _ClientLeft(request, response);
    let calls = 0;
    const listener = () => void calls++;
    left.addEventListener("abort", listener);
    left.removeEventListener("abort", listener);
    response.emit("close");
    assert.equal(calls, 0);
    assert.equal(response.listenerCount("close"), 0);
  });

  test("client left: aborted says whether the request's socket is destroyed", () => {
    assert.equal(new _ClientLeft(parts(false).request, new EventEmitter()).aborted, false);
    assert.equal(new _ClientLeft(parts(true).request, new EventEmitter()).aborted, true);
    assert.equal(new _ClientLeft({ socket: null }, new EventEmitter()).aborted, false, "no socket: not known to be gone");
  });
});
