import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { connect } from "node:net";
import type { LogRecord, RequestEvent } from "../../src/core/mod.ts";
import { serveHere } from "../support/adapter.ts";
import { runtime } from "../support/runtime.ts";

// A response body that errors after its handler returned: the client gets a cut answer, and
// it is no handler failure (the streaming review: Deno's adapter logged it as "guarded handler
// failed", the message of a handler's throw, which the guard answers itself).
describe(`adapters: a response body that errors while it is sent (${runtime})`, () => {
  test(`adapters: a body stream erroring after the handler returned cuts the answer, is no handler failure, and is not logged as one (${runtime})`, { timeout: 20_000 }, async () => {
    const records: LogRecord[] = [];
    const events: RequestEvent[] = [];
    const errors: unknown[] = [];
    const handle = await serveHere(() => {
      let sent = 0;
      return new Response(new ReadableStream<Uint8Array>({
        async pull(controller) {
          await new Promise((resolve) => setTimeout(resolve, 10));
          if (sent++ === 2) controller.error(new Error("upstream broke"));
          else controller.enqueue(new TextEncoder().encode("data: x\n\n"));
        },
      }));
    }, { log: (r) => void records.push(r), onEvent: (e) => void (e.type === "request" && events.push(e)), onError: (e) => void errors.push(e) });
    try {
      // Raw HTTP/1.1: the answer is chunked, and a cut one lacks its last chunk.
      const received = await new Promise<string>((resolve, reject) => {
        const socket = connect(handle.address.port, "127.0.0.1");
        let data = "";
        socket.setEncoding("latin1");
        socket.on("data", (chunk: string) => (data += chunk));
        socket.on("close", () => resolve(data));
        socket.on("error", () => resolve(data));
        socket.setTimeout(5_000, () => (socket.destroy(), reject(new Error(`no close: ${JSON.stringify(data)}`))));
        socket.write("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
      });
      assert.match(received, /^HTTP\/1\.1 200/);
      assert.match(received, /data: x/);
      assert.ok(!received.endsWith("0\r\n\r\n"), `the answer is cut, not ended: ${JSON.stringify(received.slice(-40))}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
      assert.deepEqual(errors, [], "not the guard's onError: the handler had returned");
      assert.deepEqual(events.map((e) => e.outcome), ["ok"]);
      assert.deepEqual(records.filter((r) => r.msg === "guarded handler failed"), []);
      // Deno hands the failure to the adapter's onError, which says what it was; Node and Bun print their own.
      if (runtime === "deno") {
        const { BODY_FAILED } = await import("../../src/adapters/deno/serve.ts");
        assert.equal(records.filter((r) => r.msg === BODY_FAILED).length, 1);
      }
    } finally {
      await handle.shutdown("test done");
    }
  });
});
