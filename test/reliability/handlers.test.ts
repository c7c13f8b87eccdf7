// Reliability: handlers that misbehave. A throw, a rejection, a non-Response, a hang past the
// deadline, a straggler that ignores its AbortSignal: each gets its documented answer (500 /
// 408 with a generic body), the straggler is counted and keeps its permit until it really
// ends, and afterwards the permits are exact. Real loopback HTTP against the fixture server.
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { runtime } from "../support/runtime.ts";
import { openSock, records, type Running, type Sock, startServer, statsUntil, waitForRecord, waitUntil, within } from "../support/reliability.ts";

const CONCURRENCY = 3;
const TIMEOUT_MS = 1000;
const TIMEOUT = { timeout: 30_000 };
const idle = (s: { inFlight: number; stragglers: number }) => s.inFlight === 0 && s.stragglers === 0;

async function get(server: Running, path: string): Promise<{ status: number; body: string; headers: Headers }> {
  const res = await within(fetch(server.url(path)), `GET ${path}`);
  return { status: res.status, body: await res.text(), headers: res.headers };
}

describe(`reliability (${runtime}): handlers`, () => {
  let shared: Promise<Running> | undefined;
  const server = () =>
    (shared ??= startServer({ CONCURRENCY: String(CONCURRENCY), TIMEOUT_MS: String(TIMEOUT_MS), DRAIN_MS: "3000", PER_KEY: "8" }));
  after(async () => (await shared?.catch(() => undefined))?.child.kill());

  for (const [path, what] of [["/throw", "throws"], ["/reject", "rejects"], ["/bogus", "returns something that is not a Response"]] as const) {
    test(`reliability (${runtime}): a handler that ${what} → 500 with a generic body, the error reported, the permit released`, TIMEOUT, async () => {
      const s = await server();
      const before = records(s.child, "handlerError").length;
      const res = await get(s, path);
      assert.equal(res.status, 500);
      assert.equal(res.body, "Internal Server Error");
      assert.doesNotMatch(res.body, /secret/);
      await statsUntil(s, (x) => idle(x) && x.perKeyInFlight === 0, "the permit released");
      // The child's report may reach its stdout after the answer reached us: wait for it, then count.
      await waitUntil(() => records(s.child, "handlerError").length > before, () => "onError's report");
      assert.equal(records(s.child, "handlerError").length, before + 1, "onError saw the failure once");
    });
  }

  test(`reliability (${runtime}): a handler that hangs past the deadline but honours its signal → 408, the signal fired with TimeoutError, nothing left in flight`, TIMEOUT, async () => {
    const s = await server();
    const res = await get(s, "/hang?id=hang");
    assert.equal(res.status, 408);
    assert.equal(res.body, "Request Timeout");
    const aborted = await waitForRecord(s.child, "hangAborted", "the handler's signal", "hang");
    assert.equal(aborted.reason, "TimeoutError");
    await statsUntil(s, (x) => idle(x) && x.perKeyInFlight === 0, "the permit released");
  });

  test(`reliability (${runtime}): a handler that ignores its signal → 408 at the deadline, counted as a straggler holding its permit until it ends, then everything is released`, TIMEOUT, async () => {
    const s = await server();
    const res = await get(s, "/ignore?id=straggler&ms=2500");
    assert.equal(res.status, 408);
    // Answered, but still running: one straggler, one permit, one per-key slot.
    const during = await s.stats();
    assert.equal(records(s.child, "ignoreDone").length, 0, "the straggler ended before the 408 was read");
    assert.deepEqual([during.inFlight, during.stragglers, during.perKeyInFlight], [1, 1, 1]);
    // Its permit is real: only CONCURRENCY - 1 more requests fit beside it (held, without a
    // deadline of their own, until this test lets them go).
    const held: Sock[] = [];
    try {
      for (let i = 0; i < CONCURRENCY - 1; i++) {
        const sock = await openSock(s.port);
        sock.write(`GET /slow?id=beside-${i}&ms=10000&timeoutMs=Infinity HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
        held.push(sock);
      }
      await statsUntil(s, (x) => x.inFlight === CONCURRENCY, "the lane full beside the straggler");
      const shed = await get(s, "/");
      assert.equal(shed.status, 503);
      assert.match(shed.headers.get("retry-after") ?? "", /^[1-9][0-9]*$/);
    } finally {
      for (const sock of held) sock.destroy();
    }
    const done = await waitForRecord(s.child, "ignoreDone", "the straggler ending on its own", "straggler");
    assert.equal(done.signalAborted, true, "its signal had fired at the deadline");
    await statsUntil(s, (x) => idle(x) && x.perKeyInFlight === 0, "the straggler's permit and slot released");
  });

  test(`reliability (${runtime}): after every failure above the permits are exact: ${CONCURRENCY} concurrent requests admitted, the next one 503`, TIMEOUT, async () => {
    const s = await server();
    await statsUntil(s, idle, "nothing in flight");
    const held: Sock[] = [];
    try {
      for (let i = 0; i < CONCURRENCY; i++) {
        const sock = await openSock(s.port);
        sock.write(`GET /slow?id=exact-${i}&ms=10000&timeoutMs=Infinity HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
        held.push(sock);
      }
      await statsUntil(s, (x) => x.inFlight === CONCURRENCY, `${CONCURRENCY} in flight`);
      const shed = await get(s, "/");
      assert.equal(shed.status, 503);
      const still = await s.stats();
      assert.equal(still.inFlight, CONCURRENCY, "a refused request took or released a permit");
    } finally {
      for (const sock of held) sock.destroy();
    }
    await statsUntil(s, (x) => idle(x) && x.perKeyInFlight === 0, "all released");
    const ok = await get(s, "/");
    assert.equal(ok.status, 200);
    assert.doesNotMatch(s.child.stderr(), /Uncaught|unhandled|panicked/i);
  });
});
