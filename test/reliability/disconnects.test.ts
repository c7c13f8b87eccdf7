// Reliability: clients that leave. A client that disconnects mid-upload, while its handler
// works, or mid-response must not leave a permit or a per-key slot behind: the in-flight
// gauges return to 0, and the caps are exact afterwards (no slot lost, none handed out twice).
// Real loopback HTTP against the fixture server under the runtime running this file.
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { runtime } from "../support/runtime.ts";
import {
  delay,
  openSock,
  records,
  type Running,
  type Sock,
  startServer,
  statsUntil,
  waitForRecord,
  within,
} from "../support/reliability.ts";

const PER_KEY = 3;
const CONCURRENCY = 6;
const TIMEOUT = { timeout: 30_000 };
const zero = (s: { inFlight: number; perKeyInFlight: number | null; stragglers: number }) =>
  s.inFlight === 0 && s.perKeyInFlight === 0 && s.stragglers === 0;

describe(`reliability (${runtime}): disconnects`, () => {
  let shared: Promise<Running> | undefined;
  const server = () =>
    (shared ??= startServer({
      CONCURRENCY: String(CONCURRENCY),
      PER_KEY: String(PER_KEY),
      BODY_LIMIT: String(1024 * 1024),
      TIMEOUT_MS: "5000",
      DRAIN_MS: "6000",
    }));
  after(async () => (await shared?.catch(() => undefined))?.child.kill());

  test(`reliability (${runtime}): a client that disconnects mid-upload → the handler's body read fails, permit and per-key slot are released`, TIMEOUT, async () => {
    const s = await server();
    const sock = await openSock(s.port);
    try {
      sock.write("POST /upload?id=mid-upload HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000\r\n\r\n" + "u".repeat(1000));
      await waitForRecord(s.child, "uploadStarted", "the upload admitted", "mid-upload");
      const busy = await statsUntil(s, (x) => x.inFlight === 1 && x.perKeyInFlight === 1, "the upload in flight");
      assert.equal(busy.stragglers, 0);
    } finally {
      sock.destroy();
    }
    await statsUntil(s, zero, "permit and per-key slot released after the disconnect");
    const seen = await waitForRecord(s.child, "upload", "the handler's body read ending", "mid-upload");
    assert.ok(typeof seen.error === "string", `the handler's read ended without an error: ${JSON.stringify(seen)}`);
    assert.ok(Number(seen.bytes) < 100000);
  });

  test(`reliability (${runtime}): a client that disconnects while its handler works → the handler's signal fires (AbortError), permit and slot are released`, TIMEOUT, async () => {
    const s = await server();
    const sock = await openSock(s.port);
    try {
      sock.write("GET /slow?id=mid-work&ms=4000 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
      await waitForRecord(s.child, "started", "the slow request admitted", "slow");
      await statsUntil(s, (x) => x.inFlight === 1 && x.perKeyInFlight === 1, "the slow request in flight");
    } finally {
      sock.destroy();
    }
    const aborted = await waitForRecord(s.child, "slowAborted", "the handler's signal firing", "mid-work");
    assert.equal(aborted.reason, "AbortError");
    await statsUntil(s, zero, "permit and per-key slot released after the disconnect");
  });

  test(`reliability (${runtime}): a client that disconnects mid-response → the response body stream is cancelled, nothing stays in flight`, TIMEOUT, async () => {
    const s = await server();
    const sock = await openSock(s.port);
    try {
      sock.write("GET /stream?id=mid-response&chunks=100&ms=50 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
      // Headers and the first chunks have arrived: the response is under way.
      await within((async () => {
        while (!/chunk 2\n/.test(sock.received().toString("latin1"))) await delay(10);
      })(), "the first chunks of the streamed response");
      assert.match(sock.received().toString("latin1"), /^HTTP\/1\.1 200 /);
    } finally {
      sock.destroy();
    }
    const cancelled = await waitForRecord(s.child, "streamCancelled", "the body stream cancelled", "mid-response");
    assert.ok(Number(cancelled.sent) < 100);
    assert.equal(records(s.child, "streamDone").filter((r) => r.streamDone === "mid-response").length, 0);
    // The permit was released when the handler returned its Response (DESIGN.md: held until
    // the handler settles, not until the body is sent), so nothing is in flight now.
    await statsUntil(s, zero, "nothing in flight after the disconnect");
  });

  test(`reliability (${runtime}): 30 clients leaving at once (uploads, slow handlers, streams) → every permit and slot comes back, and the caps are exact afterwards`, TIMEOUT, async () => {
    const s = await server();
    const socks: Sock[] = [];
    try {
      // Ten rounds of three disconnects each, from one client key: at most PER_KEY (3) are
      // admitted at once, the rest are refused with 429 — either way nothing may stay held.
      for (let round = 0; round < 10; round++) {
        const kinds = [
          "POST /upload?id=burst HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 50000\r\n\r\n" + "u".repeat(500),
          "GET /slow?id=burst&ms=4000 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
          "GET /stream?id=burst&chunks=100&ms=20 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
        ];
        const batch = await Promise.all(kinds.map(async (head) => {
          const sock = await openSock(s.port);
          sock.write(head);
          return sock;
        }));
        socks.push(...batch);
        await delay(30);
        for (const sock of batch) sock.destroy();
      }
    } finally {
      for (const sock of socks) sock.destroy();
    }
    await statsUntil(s, (x) => zero(x) && x.perKeySize === 0, "every permit and slot back after 30 disconnects");

    // Exact afterwards: PER_KEY slow requests from this client are admitted, the next is
    // refused as "peer busy" (429) at once — a lost slot would refuse earlier, a slot handed
    // back twice would admit more.
    const held: Sock[] = [];
    try {
      for (let i = 0; i < PER_KEY; i++) {
        const sock = await openSock(s.port);
        sock.write(`GET /slow?id=exact-${i}&ms=10000&timeoutMs=Infinity HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
        held.push(sock);
      }
      await statsUntil(s, (x) => x.inFlight === PER_KEY && x.perKeyInFlight === PER_KEY, `${PER_KEY} slow requests in flight`);
      const refused = await within(fetch(s.url("/")), "one more request from the same client");
      assert.equal(refused.status, 429);
      assert.match(refused.headers.get("retry-after") ?? "", /^[1-9][0-9]*$/);
      await refused.body?.cancel();
    } finally {
      for (const sock of held) sock.destroy();
    }
    await statsUntil(s, zero, "the three slow requests released");
    const ok = await within(fetch(s.url("/")), "a request after everything was released");
    assert.equal(ok.status, 200);
    await ok.body?.cancel();
  });
});
