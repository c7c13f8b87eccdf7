// The rate store's timeout against a backend over a real socket on this runtime: a loop blocked
// past the timeout while the answer waits in the socket (a synchronous handler, a collection)
// is not the store's failure (the clocks review: every call in flight was a timeout, refused
// 429 under the default fail-closed, on all three runtimes).
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { connect, type Socket } from "node:net";
import { createRateStore, type RateStoreCheck, type RateStoreReply } from "../../../src/core/limits/rate_store.ts";
import { runtime } from "../../support/runtime.ts";

// A line server answering each call "allowed" at once, in a child process of its own, so that
// it answers while this process's loop is blocked (the answers wait in the socket, unread).
const STORE = `
const net = require("node:net");
const server = net.createServer((c) => {
  c.setNoDelay(true);
  let buf = "";
  c.on("data", (d) => {
    buf += d;
    for (let i = buf.indexOf("\\n"); i >= 0; i = buf.indexOf("\\n")) {
      const call = JSON.parse(buf.slice(0, i));
      buf = buf.slice(i + 1);
      const results = Array.from({ length: call.n }, () => ({ allowed: true, remaining: 1, resetMs: 1000, retryAfterMs: 0 }));
      c.write(JSON.stringify({ id: call.id, reply: { now: 0, results } }) + "\\n");
    }
  });
});
server.listen(0, "127.0.0.1", () => console.log(server.address().port));
setTimeout(() => process.exit(0), 15000);
`;

async function lineStore(): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn("node", ["-e", STORE], { stdio: ["ignore", "pipe", "inherit"] });
  const port = await new Promise<number>((resolve, reject) => {
    child.once("error", reject);
    child.stdout!.once("data", (d) => resolve(Number(String(d).trim())));
  });
  return { child, port };
}

describe(`rate store over a socket (${runtime})`, () => {
  test(`rate store: calls whose answers came while the loop was blocked past the timeout are answered, not timed out (${runtime})`, { timeout: 20_000 }, async () => {
    const { child, port } = await lineStore();
    const socket: Socket = connect(port, "127.0.0.1");
    socket.setNoDelay(true);
    await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
    const waiting = new Map<number, (r: RateStoreReply) => void>();
    let buf = "";
    socket.on("data", (d) => {
      buf += d;
      for (let i = buf.indexOf("\n"); i >= 0; i = buf.indexOf("\n")) {
        const m = JSON.parse(buf.slice(0, i)) as { id: number; reply: RateStoreReply };
        buf = buf.slice(i + 1);
        waiting.get(m.id)?.(m.reply);
        waiting.delete(m.id);
      }
    });
    let id = 0;
    const store = createRateStore({
      take: (checks: readonly RateStoreCheck[]) =>
        new Promise<RateStoreReply>((resolve) => {
          const n = ++id;
          waiting.set(n, resolve);
          socket.write(JSON.stringify({ id: n, n: checks.length }) + "\n");
        }),
    }, { timeoutMs: 50 });
    const check: RateStoreCheck = { algorithm: "fixed-window", limiter: "api", key: "k", cost: 1, limit: 10, windowMs: 1000, intervalMs: 1000 };
    try {
      // Once on time: the store answers.
      const first = await store.call([check]);
      assert.ok(!("failure" in first), JSON.stringify(first));
      for (let round = 0; round < 3; round++) {
        const calls = [store.call([check]), store.call([check]), store.call([check])];
        // The loop blocked 120 ms: the store answers meanwhile, and the answers wait unread.
        const end = performance.now() + 120;
        while (performance.now() < end);
        const answers = await Promise.all(calls);
        assert.deepEqual(answers.map((a) => ("failure" in a ? a.failure : "answered")), ["answered", "answered", "answered"], `round ${round}`);
      }
      assert.equal(store.state, "ok");
    } finally {
      socket.destroy();
      child.kill(); // ours, by its handle (its PID)
    }
  });
});
