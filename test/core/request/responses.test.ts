import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { denyResponse, fallbackResponse, retryAfterSeconds } from "../../../src/core/request/responses.ts";
import type { LogRecord } from "../../../src/core/host/host.ts";
import { _withClose } from "../../../src/core/request/body_caps.ts";

describe("responses", () => {
  test("responses: Retry-After is whole seconds, rounded up, at least 1", () => {
    assert.equal(retryAfterSeconds(0), 1);
    assert.equal(retryAfterSeconds(1), 1);
    assert.equal(retryAfterSeconds(1000), 1);
    assert.equal(retryAfterSeconds(1001), 2);
    assert.equal(retryAfterSeconds(59_500), 60);
    assert.equal(retryAfterSeconds(NaN), 1);
    // delta-seconds, never "1e+25" (a token bucket refilling over ages)
    assert.equal(retryAfterSeconds(1e28), 2_147_483_647);
  });

  test("responses: denial bodies are generic text and never cached", async () => {
    for (const [status, text] of [[400, "Bad Request"], [408, "Request Timeout"], [413, "Content Too Large"], [429, "Too Many Requests"], [503, "Service Unavailable"]] as const) {
      const res = denyResponse(status);
      assert.equal(res.status, status);
      assert.equal(await res.text(), text);
      assert.equal(res.headers.get("content-type"), "text/plain; charset=utf-8");
      assert.equal(res.headers.get("cache-control"), "no-store");
      assert.equal(res.headers.get("retry-after"), null);
    }
    const draining = denyResponse(503, { retryAfterMs: 2500, close: true, headers: { "x-extra": "1" } });
    assert.equal(draining.headers.get("retry-after"), "3");
    assert.equal(draining.headers.get("connection"), "close");
    assert.equal(draining.headers.get("x-extra"), "1");
  });

  test("responses: a failed guarded fetch is logged once and answered with the guard's own generic 500", async () => {
    const logs: LogRecord[] = [];
    const error = new Error("secret detail");
    const res = fallbackResponse(error, (record) => logs.push(record));
    assert.deepEqual(logs, [{ level: "error", msg: "guarded handler failed", error }]);
    const guards = denyResponse(500);
    assert.equal(res.status, 500);
    assert.deepEqual([...res.headers], [...guards.headers]);
    assert.equal(await res.text(), await guards.text());
  });

  test("responses: _withClose marks an answer Connection: close, keeps one already closing, and leaves a 101 (a WebSocket upgrade) as it is", async () => {
    const marked = _withClose(new Response("ok", { status: 201, headers: { "x-a": "1" } }));
    assert.deepEqual([marked.status, marked.headers.get("connection"), marked.headers.get("x-a"), await marked.text()], [201, "close", "1", "ok"]);
    const closing = new Response("ok", { headers: { connection: "close" } });
    assert.equal(_withClose(closing), closing);
    // Deno's upgradeWebSocket answers 101, a status no Response constructor takes: its shape.
    const upgrade = { status: 101, headers: new Headers({ upgrade: "websocket" }) } as Response;
    assert.equal(_withClose(upgrade), upgrade);
    assert.equal(upgrade.headers.get("connection"), null);
  });
});
