// A client that sends a request and resets its connection at once: by the time a keyed gate
// read the peer, Node's socket had no address, Bun's requestIP none, and Deno reported
// 0.0.0.0:0, so the request was keyed "unknown" (Node, Bun) or "0.0.0.0" (Deno) — past its own
// address's spent budget, and its handler ran (a review: 14 of 100 reset requests on Node).
// The adapters say such a client is gone: refused ("aborted", which nobody receives).
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import net from "node:net";
import { serveHere } from "../support/adapter.ts";
import { runtime } from "../support/runtime.ts";
import { createFixedWindowLimiter } from "../../src/core/limits/fixed_window.ts";

describe(`peer reset (${runtime})`, () => {
  test(`peer reset: a request whose client reset the connection at once runs no handler past its address's spent budget (${runtime})`, { timeout: 30_000 }, async () => {
    const keys: string[] = [];
    const denials: string[] = [];
    const handle = await serveHere(async (_request, { context }) => {
      keys.push(String(context.key));
      return new Response("ran");
    }, { rateLimits: [{ limiter: createFixedWindowLimiter({ limit: 3, windowMs: 60_000, name: "ip" }) }], log: () => {}, onDeny: (e) => void denials.push(`${e.layer}/${e.reason}`) });
    try {
      const port = handle.address.port;
      for (let i = 0; i < 3; i++) assert.equal((await fetch(`http://127.0.0.1:${port}/`)).status, 200);
      assert.equal((await fetch(`http://127.0.0.1:${port}/`)).status, 429, "the address's budget is spent");
      const reset = (delayMs: number) =>
        new Promise<void>((resolve) => {
          const sock = net.connect(port, "127.0.0.1", () => {
            sock.write("POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello");
            setTimeout(() => (sock.resetAndDestroy(), resolve()), delayMs);
          });
          sock.on("error", () => resolve());
        });
      for (const delayMs of [0, 0, 1, 1, 2, 3]) await Promise.all(Array.from({ length: 6 }, () => reset(delayMs)));
      await new Promise((r) => setTimeout(r, 300));
      assert.equal((await fetch(`http://127.0.0.1:${port}/`)).status, 429);
      assert.deepEqual(keys.slice(3), [], "no reset request ran past the spent budget");
      assert.deepEqual(denials.filter((d) => d !== "rate/over-limit" && d !== "rate/aborted"), [], "refused by the rate gate, over its limit or as gone");
    } finally {
      await handle.shutdown();
    }
  });
});
