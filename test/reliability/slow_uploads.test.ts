// Reliability: slow uploads beside fast requests. A request whose handler waits on its client
// for body bytes holds no place in the concurrency limit once it has read its body for a while
// (src/core/request/_body_waits.ts): it stays held (the drain waits for it), but a waiter takes
// its place. A review found 20 uploads of 60 KB at 8 KB/s on an idle process 18 refused 503
// under hygiene(), and fast clients beside them waiting out the whole wait bound.
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { runtime } from "../support/runtime.ts";
import { delay, openSock, type Running, startServer, statsUntil, within } from "../support/reliability.ts";

const UPLOADS = 8;
const LIMIT = 2;
/** The pause between an upload's two halves: longer than the wait bound (500 ms). */
const PAUSE_MS = 900;

describe(`reliability (${runtime}): slow uploads`, () => {
  let server: Running | undefined;
  after(() => server?.child.kill());

  test(`reliability (${runtime}): ${UPLOADS} slow uploads at a concurrency limit of ${LIMIT} are all served, and fast requests beside them too, none refused; the uploads stay counted in flight`, { timeout: 60_000 }, async () => {
    server = await startServer({ CONCURRENCY: String(LIMIT) });
    const s = server;
    const half = "x".repeat(10);
    const socks = await Promise.all(Array.from({ length: UPLOADS }, () => openSock(s.port)));
    for (const [i, sock] of socks.entries()) {
      sock.write(`POST /upload?id=u${i} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 20\r\nConnection: close\r\n\r\n${half}`);
      await delay(20);
    }
    // Fast requests while every upload waits for its second half (each on a fresh connection).
    const fast: number[] = [];
    for (let i = 0; i < 10; i++) {
      const sock = await openSock(s.port);
      sock.write(`GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`);
      fast.push((await sock.response()).status);
      sock.destroy();
      await delay(20);
    }
    // Every upload is admitted and held: counted in flight though the limit is 2.
    const held = await statsUntil(s, (x) => x.inFlight === UPLOADS, `all ${UPLOADS} uploads admitted`);
    assert.equal(held.limit, LIMIT);
    await delay(Math.max(0, PAUSE_MS - 10 * 20));
    for (const sock of socks) sock.write(half);
    const answers = await within(Promise.all(socks.map((sock) => sock.response())), "the uploads' answers");
    for (const sock of socks) sock.destroy();
    assert.deepEqual(answers.map((r) => [r.status, r.body]), Array.from({ length: UPLOADS }, () => [200, "20"]));
    assert.deepEqual(fast, Array.from({ length: 10 }, () => 200));
    await statsUntil(s, (x) => x.inFlight === 0, "the uploads settled");
  });
});
