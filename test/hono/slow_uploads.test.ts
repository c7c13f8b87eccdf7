// hygiene() on the runtime's own server (no Host: no CPU reading), with an adaptive limit that
// starts at 2: slow uploads beside fast requests. A request whose handler waits on its client
// for body bytes gives up its place in the limit once it has read its body for a while
// (src/core/request/_body_waits.ts): still held, but a waiter takes its place. A review found 20
// uploads of 60 KB at 8 KB/s 15–18 refused 503 under hygiene(), and the fast clients beside
// them refused or waiting out the whole wait bound.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { connect } from "node:net";
import { Hono } from "hono";
import { hygiene } from "../../src/hono/mod.ts";
import { runtime } from "../support/runtime.ts";
import { ownServer } from "../support/own_server.ts";
import { parseResponse } from "../support/raw_http.ts";

const UPLOADS = 8;
/** The pause between an upload's two halves: longer than the wait bound (500 ms). */
const PAUSE_MS = 900;
const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** A raw connection: write, and the first whole response (status and body). */
function open(port: number) {
  const socket = connect(port, "127.0.0.1");
  let buffer = Buffer.alloc(0);
  const answered = new Promise<[number, string]>((resolve, reject) => {
    socket.on("data", (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      const parsed = parseResponse(buffer, false);
      if (parsed?.complete) resolve([parsed.status, parsed.body]);
    });
    socket.on("error", reject);
    socket.on("close", () => reject(new Error(`closed before a whole response: ${buffer.toString("latin1").slice(0, 200)}`)));
  });
  answered.catch(() => {});
  return { write: (text: string) => socket.write(text), answered, close: () => socket.destroy() };
}

describe(`hono: slow uploads under hygiene() on the runtime's own server (${runtime})`, () => {
  test(`hono: ${UPLOADS} slow uploads at an adaptive limit of 2 are all served, and fast requests beside them too, none refused; the uploads stay counted in flight (${runtime})`, { timeout: 30_000 }, async () => {
    const mw = hygiene({ concurrencyLimit: { initialLimit: 2, minLimit: 2 } });
    const app = new Hono();
    app.use(mw);
    app.get("/", (c) => c.text("ok"));
    app.post("/upload", async (c) => c.text(String((await c.req.arrayBuffer()).byteLength)));
    const server = await ownServer(app.fetch);
    const half = "x".repeat(10);
    const uploads = Array.from({ length: UPLOADS }, () => open(server.port));
    try {
      for (const upload of uploads) {
        upload.write(`POST /upload HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 20\r\nConnection: close\r\n\r\n${half}`);
        await delay(20);
      }
      // Fast requests while every upload waits for its second half.
      const fast: number[] = [];
      for (let i = 0; i < 10; i++) {
        const get = open(server.port);
        get.write("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
        fast.push((await get.answered)[0]);
        get.close();
        await delay(20);
      }
      const concurrency = mw.guard.concurrency;
      assert.equal(concurrency.inFlight, UPLOADS, "every upload admitted and held");
      assert.ok(concurrency.limit < UPLOADS, `the limit stayed below them (else nothing here could fail): ${concurrency.limit}`);
      await delay(Math.max(0, PAUSE_MS - 10 * 20));
      for (const upload of uploads) upload.write(half);
      const answers = await Promise.all(uploads.map((u) => u.answered));
      assert.deepEqual(answers, Array.from({ length: UPLOADS }, () => [200, "20"]));
      assert.deepEqual(fast, Array.from({ length: 10 }, () => 200));
      await delay(50);
      assert.equal(concurrency.inFlight, 0);
    } finally {
      for (const upload of uploads) upload.close();
      mw.guard.dispose();
      await server.close();
    }
  });
});
