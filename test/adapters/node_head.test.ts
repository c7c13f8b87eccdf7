import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { rawConnect } from "../support/raw_http.ts";
import { runtime } from "../support/runtime.ts";

// The node adapter decides the cheap refusals of a request without a body from its head,
// before @hono/node-server builds a Request. Seen from outside: a request that cannot be
// translated at all (HTTP/1.0 without a Host header: @hono/node-server cannot build its URL)
// is still refused by the gates with their 503 — the translation would have answered 400.
// The head path exists only in the node adapter, so this runs under Node only.
const onNode = runtime === "node";
const skipped = onNode ? "" : ` (skipped on ${runtime}: the head path is the node adapter's)`;

/**
 * The node adapter serving "ok", with a concurrency limit of 1 that a GET /hold keeps until
 * `release()`; what it logged and refused is recorded.
 */
async function holdServer(shedWaitMs: number) {
  const { serve } = await import("../../src/adapters/node/mod.ts");
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  const s = { started: 0, logged: [] as string[], denied: [] as string[] };
  const handle = await serve(async (request) => {
    if (new URL(request.url).pathname === "/hold") {
      s.started++;
      await held;
    }
    return new Response("ok");
  }, { port: 0, concurrencyLimit: 1, shedWaitMs, loadMonitor: false, log: (r) => s.logged.push(r.msg), onDeny: (e) => s.denied.push(`${e.layer}/${e.reason}`) });
  return Object.assign(s, { handle, release });
}

describe(`node adapter: refusals from the request head (${runtime})`, () => {
  test(`node adapter: a GET refused by a gate is answered before any translation, with the same 503 as a translated refusal; one admitted but untranslatable gives its permit back${skipped}`, { skip: !onNode, timeout: 15_000 }, async () => {
    const s = await holdServer(0);
    const { handle, release, logged } = s;
    const port = handle.address.port;
    const ask = async (text: string) => {
      const conn = await rawConnect(port);
      try {
        conn.write(text);
        return await conn.response();
      } finally {
        conn.destroy();
      }
    };
    const holder = await rawConnect(port);
    try {
      holder.write("GET /hold HTTP/1.1\r\nHost: x\r\n\r\n");
      while (s.started < 1) await new Promise((r) => setTimeout(r, 5));
      const fromHead = await ask("GET / HTTP/1.0\r\n\r\n");
      assert.equal(fromHead.status, 503, "refused by the concurrency limit, not answered 500 by a failed translation");
      // A request with a body goes through the translation: its refusal must read the same.
      const translated = await ask("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi");
      assert.equal(translated.status, 503);
      assert.equal(fromHead.body, translated.body);
      for (const name of ["content-type", "cache-control", "retry-after", "content-length"]) {
        assert.equal(fromHead.headers.get(name), translated.headers.get(name), name);
      }
      assert.equal(logged.length, 0);
      release();
      assert.equal((await holder.response()).status, 200);
      // Admitted by the gates, then the translation fails: a parser's 400, not logged, and the permit is back.
      const untranslatable = await ask("GET / HTTP/1.0\r\n\r\n");
      assert.equal(untranslatable.status, 400);
      assert.equal(logged.length, 0);
      assert.equal((await ask("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")).status, 200, "the permit was given back");
      assert.equal(handle.guard.inFlight, 0);
    } finally {
      holder.destroy();
      await handle.shutdown("test done");
    }
  });
  test(`node adapter: a GET that waits is not translated while it waits: refused after its wait, it is answered from the head; admitted after it, translated then${skipped}`, { skip: !onNode, timeout: 15_000 }, async () => {
    // A wait bound long enough that the second waiter below is admitted, not refused, on a slow machine.
    const s = await holdServer(1000);
    const { handle, release, logged, denied } = s;
    const port = handle.address.port;
    const holder = await rawConnect(port);
    const waiter = await rawConnect(port);
    try {
      holder.write("GET /hold HTTP/1.1\r\nHost: x\r\n\r\n");
      while (s.started < 1) await new Promise((r) => setTimeout(r, 5));
      // Untranslatable (HTTP/1.0 without a Host): had it been translated to wait, the answer would be the translation's 400.
      waiter.write("GET / HTTP/1.0\r\n\r\n");
      const refused = await waiter.response();
      assert.equal(refused.status, 503, "refused at its wait bound from the head, not answered 400 by a failed translation");
      assert.deepEqual(denied, ["concurrency/queue-timeout"]);
      assert.equal(refused.headers.get("retry-after"), "1");
      assert.equal(refused.body, "Service Unavailable");
      assert.equal(logged.length, 0);
      // A translatable waiter, admitted when the permit comes back: translated then, and served.
      const next = await rawConnect(port);
      try {
        next.write("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        while (handle.guard.concurrency.waiting < 1) await new Promise((r) => setTimeout(r, 2));
        release();
        assert.equal((await holder.response()).status, 200);
        assert.equal((await next.response()).status, 200);
      } finally {
        next.destroy();
      }
      assert.equal(handle.guard.inFlight, 0);
    } finally {
      release();
      holder.destroy();
      waiter.destroy();
      await handle.shutdown("test done");
    }
  });
});
