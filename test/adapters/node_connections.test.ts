import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { rawConnect } from "../support/raw_http.ts";
import { runtime } from "../support/runtime.ts";

// The connection cap needs a connection hook: only node:http has one (Bun.serve and
// Deno.serve expose none; see the README's capability table). The node adapter is meant
// for Node, so this runs under Node only.
const onNode = runtime === "node";

describe(`node adapter connections (${runtime})`, () => {
  test(`node adapter: a client over maxConnections gets an HTTP 503 with Retry-After, not a reset${onNode ? "" : ` (skipped on ${runtime}: the connection cap exists only on node:http)`}`, { skip: !onNode }, async () => {
    const { serve } = await import("../../src/adapters/node/mod.ts");
    const handle = await serve(() => new Response("ok"), { port: 0, maxConnections: 2, log: () => {}, loadMonitor: false });
    const open: { destroy(): void }[] = [];
    try {
      for (let i = 0; i < 2; i++) {
        const conn = await rawConnect(handle.address.port);
        conn.write("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
        assert.equal((await conn.response()).status, 200);
        open.push(conn);
      }
      while ((handle.server.connectionCount?.() ?? 0) < 2) await new Promise((r) => setTimeout(r, 5));
      const third = await rawConnect(handle.address.port);
      open.push(third);
      third.write("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
      const res = await third.response();
      assert.equal(res.status, 503);
      assert.equal(res.headers.get("retry-after"), "1");
      assert.equal(res.headers.get("connection"), "close");
      open.shift()!.destroy();
      while ((handle.server.connectionCount?.() ?? 2) >= 2) await new Promise((r) => setTimeout(r, 5));
      const again = await rawConnect(handle.address.port);
      open.push(again);
      again.write("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
      assert.equal((await again.response()).status, 200, "a freed slot admits the next connection");
    } finally {
      for (const c of open) c.destroy();
      await handle.shutdown();
    }
  });
});
