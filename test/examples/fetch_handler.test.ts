import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { runtime } from "../support/runtime.ts";
import handler from "../../examples/fetch-handler.ts";

describe(`examples: fetch handler (${runtime})`, () => {
  test(`fetch handler: answers Requests through the guard with no Host (${runtime})`, async () => {
    const res = await handler.fetch(new Request("http://edge.example/"));
    assert.equal(res.status, 200);
    assert.equal(await res.text(), "hello from the edge");
  });

  test(`fetch handler: the body cap holds without any runtime help (${runtime})`, async () => {
    const ok = await handler.fetch(new Request("http://edge.example/echo", { method: "POST", body: "ping" }));
    assert.equal(await ok.text(), "ping");
    const big = await handler.fetch(new Request("http://edge.example/echo", { method: "POST", body: "x".repeat(64 * 1024 + 1) }));
    assert.equal(big.status, 413);
  });

  test(`fetch handler: malformed framing is refused before the app runs (${runtime})`, async () => {
    const res = await handler.fetch(
      new Request("http://edge.example/echo", { method: "POST", body: "ping", headers: { "content-length": "abc" } }),
    );
    assert.equal(res.status, 400);
  });

  test(`fetch handler: a request finishing normally leaves nothing in flight (${runtime})`, async () => {
    const res = await handler.fetch(new Request("http://edge.example/wait?ms=1"));
    assert.equal(await res.text(), "waited");
  });
});
