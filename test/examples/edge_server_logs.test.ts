// The example edge server is a model users copy: every line it prints is one JSON object,
// expected outcomes (413, 408, a client leaving) print no stack trace, it says where it
// listens, and its drain line says how long the drain took.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { Hono } from "hono";
import { HTTPException } from "hono/http-exception";
import { BodyTooLargeError, type LogRecord } from "../../src/mod.ts";
import { edgeErrorHandler } from "../../examples/edge/errors.ts";
import { runtime, startChild } from "../support/runtime.ts";
import { chunk, openSock, parseResponse, within } from "../support/reliability.ts";

describe(`examples: edge server logs (${runtime})`, () => {
  test(`edge server: a 413 mid-body, a 408, a client leaving (mid-handler and mid-upload) and /login's 429s print only JSON lines, no stack trace; the startup line has the url and pid, the drain line a duration (${runtime})`, { timeout: 40_000 }, async () => {
    const child = startChild("examples/edge-server.ts", {
      PORT: "0",
      HOST: "127.0.0.1",
      HYGIENE_BODY_LIMIT_BYTES: "1000",
      HYGIENE_UPLOAD_LIMIT_BYTES: "10000",
      // Long enough that no ordinary request below reaches it on a loaded machine.
      HYGIENE_REQUEST_TIMEOUT_MS: "2000",
      HYGIENE_DRAIN_TIMEOUT_MS: "5000",
      HYGIENE_LOAD_MONITOR: "off",
    });
    try {
      const listening = JSON.parse(await child.waitForLine(/"listening"/));
      assert.equal(listening.url, `http://127.0.0.1:${listening.port}`, "the startup line says where to go");
      assert.equal(listening.pid, child.pid, "the startup line names the server's own process");
      const port: number = listening.port;

      // 413 while the body is read: /upload reads a chunked body past its cap.
      const upload = await openSock(port);
      upload.write("POST /upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n");
      for (let i = 0; i < 3; i++) upload.write(chunk("x".repeat(5000)));
      upload.write("0\r\n\r\n");
      await within(upload.closed, "the connection closing after the 413");
      assert.equal(parseResponse(upload.received(), true)?.status, 413);

      // 408: a handler that honours its signal, past the request deadline.
      const slow = await fetch(`http://127.0.0.1:${port}/work?ms=60000`);
      assert.equal(slow.status, 408);
      await slow.body?.cancel();

      // A client that leaves while its handler runs.
      const gone = await openSock(port);
      gone.write("GET /work?ms=60000 HTTP/1.1\r\nHost: x\r\n\r\n");
      await new Promise((r) => setTimeout(r, 100));
      gone.destroy();

      // A client that leaves mid-upload (Deno logged "handler failed" at error level for it).
      const half = await openSock(port);
      half.write("POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n" + "x".repeat(1000));
      await new Promise((r) => setTimeout(r, 100));
      half.destroy();
      await new Promise((r) => setTimeout(r, 100));

      // /login's auth limiter (5 a minute): the 429s are refused and logged as such.
      const statuses: number[] = [];
      for (let i = 0; i < 7; i++) {
        const res = await fetch(`http://127.0.0.1:${port}/login`, { method: "POST" });
        statuses.push(res.status);
        await res.arrayBuffer();
      }
      assert.deepEqual(statuses, [401, 401, 401, 401, 401, 429, 429]);
      const refused = JSON.parse(await child.waitForLine(/"request refused".*"rate"/));
      assert.equal(refused.limiterClass, "auth");

      child.kill("SIGTERM");
      const drained = JSON.parse(await child.waitForLine(/"drained"/));
      assert.equal(drained.outcome, "clean");
      assert.equal(typeof drained.durationMs, "number");
      assert.ok(drained.durationMs >= 0, `durationMs ${drained.durationMs}`);
      assert.equal(await within(child.exited, "the exit"), 0);

      const lines = (child.stdout() + child.stderr()).split("\n").filter((line) => line.trim() !== "");
      for (const line of lines) {
        assert.doesNotMatch(line, /^\s+at /, `a stack trace line: ${line}`);
        let record: unknown;
        assert.doesNotThrow(() => (record = JSON.parse(line)), `not one JSON object: ${line}`);
        assert.ok(record !== null && typeof record === "object" && !Array.isArray(record), `not a JSON object: ${line}`);
      }
      // None of the expected outcomes above is logged as a failure.
      const errors = lines.map((l) => JSON.parse(l)).filter((r) => r.level === "error");
      assert.deepEqual(errors, []);
    } finally {
      child.kill();
    }
  });

  test("edge server errors: typed errors and Hono's client errors are answered quietly; an unexpected error is logged once and answered 500", async () => {
    const lines: LogRecord[] = [];
    const app = new Hono();
    app.onError(edgeErrorHandler((record) => void lines.push(record)));
    app.get("/big", () => {
      throw new BodyTooLargeError(10);
    });
    app.get("/bad", () => {
      throw new HTTPException(400, { message: "malformed" });
    });
    app.get("/boom", () => {
      throw new Error("boom");
    });
    assert.equal((await app.request("/big")).status, 413);
    assert.equal((await app.request("/bad")).status, 400);
    assert.equal(lines.length, 0);
    const boom = await app.request("/boom");
    assert.equal(boom.status, 500);
    assert.equal(await boom.text(), "Internal Server Error", "the client never sees the error");
    assert.equal(lines.length, 1);
    assert.equal(lines[0]!.msg, "handler failed");
    assert.equal(lines[0]!.path, "/boom");
  });
});
