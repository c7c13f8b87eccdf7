// The admission queue over real HTTP (port 0, loopback): a request waiting for a permit whose
// client disconnects gives its place back at once (its handler never runs), and a load at half
// of what the limit admits is never refused.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import type { DenyEvent } from "../../src/core/events.ts";
import type { ServeOptions } from "../../src/core/mod.ts";
import { serveHere } from "../support/adapter.ts";
import { rawConnect } from "../support/raw_http.ts";
import { runtime } from "../support/runtime.ts";

const TIMEOUT = { timeout: 20_000 };

/** Resolves once `check` holds, polling every 10 ms; rejects after `ms` (a bound, not a timing assertion). */
async function until(check: () => boolean, what: string, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/**
 * A server whose `/hold` holds its permit until `release()` (it ignores its signal); every
 * other path answers its path. `ran` lists the paths whose handler ran, in order.
 */
async function holdingServer(options: ServeOptions) {
  const ran: string[] = [];
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  const handle = await serveHere(async (req) => {
    const path = new URL(req.url).pathname;
    ran.push(path);
    if (path === "/hold") await held;
    return new Response(path);
  }, options);
  return { handle, ran, release };
}

describe(`admission queue (${runtime})`, () => {
  test(`admission queue: a queued request whose client disconnects releases its place and never runs (${runtime})`, TIMEOUT, async () => {
    const denials: DenyEvent[] = [];
    const { handle, ran, release } = await holdingServer({ concurrencyLimit: 1, maxWaiting: 1, shedWaitMs: 10_000, onDeny: (e) => denials.push(e) });
    try {
      const port = handle.address.port;
      const holder = fetch(`http://127.0.0.1:${port}/hold`);
      await until(() => ran.includes("/hold"), "the holder to run");
      const leaver = await rawConnect(port);
      leaver.write("GET /left HTTP/1.1\r\nHost: x\r\n\r\n");
      // The queue holds one: while the leaver waits, another request finds it full.
      await until(() => handle.guard.concurrency.waiting === 1, "the leaver to queue");
      const full = await fetch(`http://127.0.0.1:${port}/full`);
      assert.equal(full.status, 503);
      await full.text();
      leaver.destroy();
      await until(() => handle.guard.concurrency.waiting === 0, "the leaver to leave the queue");
      assert.equal(ran.length, 1, "while the holder still holds the only permit");
      // Its place is free again: the next request waits and is served once the holder ends.
      const next = fetch(`http://127.0.0.1:${port}/next`);
      await until(() => handle.guard.concurrency.waiting === 1, "the next request to queue");
      release();
      assert.equal((await holder).status, 200);
      const res = await next;
      assert.equal(res.status, 200);
      assert.equal(await res.text(), "/next");
      assert.deepEqual(ran, ["/hold", "/next"], "the leaver's handler never ran");
      assert.deepEqual(denials.map((d) => [d.layer, d.reason]), [["concurrency", "queue-full"], ["concurrency", "aborted"]]);
    } finally {
      release();
      await handle.shutdown();
    }
  });

  test(`admission queue: a forced drain answers a request waiting in the queue 503 + close, and its handler never runs — not when the held permit comes back after the drain either (${runtime})`, TIMEOUT, async () => {
    const { handle, ran, release } = await holdingServer({ concurrencyLimit: 1, shedWaitMs: 60_000, drainTimeoutMs: 300, requestTimeoutMs: Infinity, loadMonitor: false });
    const port = handle.address.port;
    try {
      const holder = fetch(`http://127.0.0.1:${port}/hold`).then((r) => r.status, () => "cut");
      await until(() => ran.includes("/hold"), "the holder to run");
      const waiter = fetch(`http://127.0.0.1:${port}/waiter`).then(async (r) => [r.status, r.headers.get("connection"), await r.text()], (e: unknown) => ["cut", String(e)]);
      await until(() => handle.guard.concurrency.waiting === 1, "the waiter to queue");
      const outcome = await handle.shutdown("test over");
      // The host set the process's exit code to 3 for the forced drain; this test process goes on.
      const deno = (globalThis as { Deno?: { exitCode: number } }).Deno;
      if (deno !== undefined) deno.exitCode = 0;
      else process.exitCode = 0;
      assert.equal(outcome.outcome, "forced");
      assert.deepEqual(await waiter, [503, "close", "Service Unavailable"]);
      assert.equal(handle.guard.concurrency.waiting, 0);
      assert.equal(await holder, 503);
      // The straggler settles after the drain: its permit comes back to nobody.
      release();
      await until(() => handle.guard.inFlight === 0, "the straggler's permit back");
      await new Promise((r) => setTimeout(r, 20));
      assert.deepEqual(ran, ["/hold"]);
    } finally {
      release();
      await handle.shutdown();
    }
  });

  test(`admission queue: at half of what the limit admits, nothing is refused (defaults: adaptive limit, queue) (${runtime})`, TIMEOUT, async () => {
    const denials: DenyEvent[] = [];
    const handle = await serveHere(async () => {
      await new Promise((r) => setTimeout(r, 5));
      return new Response("ok");
    }, { onDeny: (e) => denials.push(e) });
    try {
      const port = handle.address.port;
      // 4 clients in a closed loop against an initial limit of 8: half of it.
      const statuses: number[] = [];
      await Promise.all(Array.from({ length: 4 }, async () => {
        for (let i = 0; i < 40; i++) {
          const res = await fetch(`http://127.0.0.1:${port}/`);
          statuses.push(res.status);
          await res.text();
        }
      }));
      assert.equal(statuses.length, 160);
      assert.deepEqual(statuses.filter((s) => s !== 200), []);
      assert.deepEqual(denials, []);
    } finally {
      await handle.shutdown();
    }
  });
});
