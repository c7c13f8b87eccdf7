// Reliability: how the process ends after a drain, seen from outside. A real child
// (test/fixtures/drain_server.ts) that attaches nothing to `handle.finished` and — unless
// told — never calls exit itself, a real SIGTERM, raw loopback clients. Asserted: the exit
// code, what each client saw, and that nothing was reported as an unhandled rejection or a
// listener leak. No duration is asserted: a process that is kept alive never exits at all
// here (the SSE source ticks on its own interval timer), and every wait is bounded.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { runtime, startChild, type Child } from "../support/runtime.ts";
import { BOUND_MS, openSock, parseResponse, records, type Sock, waitForRecord, within } from "../support/reliability.ts";

const FIXTURE = "test/fixtures/drain_server.ts";
const TIMEOUT = { timeout: 40_000 };
const UNHANDLED = /unhandled|uncaught/i;

async function start(env: Record<string, string>): Promise<{ child: Child; port: number }> {
  const child = startChild(FIXTURE, env);
  try {
    const { port } = JSON.parse(await child.waitForLine(/"listening":true/, BOUND_MS)) as { port: number };
    return { child, port };
  } catch (error) {
    child.kill();
    throw error;
  }
}

async function get(port: number, path: string): Promise<Sock> {
  const sock = await openSock(port);
  sock.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
  return sock;
}

const exitOf = (child: Child) => within(child.exited, `the child's exit; stdout:\n${child.stdout()}\nstderr:\n${child.stderr()}`);

describe(`reliability (${runtime}): how the process ends after a drain`, () => {
  test(`reliability (${runtime}): a flush hook that throws → exit 4 (flush), not an unhandled rejection, with nobody awaiting handle.finished`, TIMEOUT, async () => {
    const { child } = await start({ ON_DRAINED: "throw", DRAIN_MS: "2000", TIMEOUT_MS: "1000" });
    try {
      child.kill("SIGTERM");
      assert.equal(await exitOf(child), 4, `stderr:\n${child.stderr()}`);
      assert.equal(records(child, "flushed").length, 1);
      assert.doesNotMatch(child.stderr(), UNHANDLED);
      assert.ok(records(child, "log").some((r) => r.log === "serve failed"), child.stdout());
    } finally {
      child.kill();
    }
  });

  test(`reliability (${runtime}): a listener that fails while serving → exit 1 (io) on its own, not an unhandled rejection`, TIMEOUT, async () => {
    const { child } = await start({ LISTENER: "fail", DRAIN_MS: "2000", TIMEOUT_MS: "1000" });
    try {
      assert.equal(await exitOf(child), 1, `stderr:\n${child.stderr()}`);
      assert.doesNotMatch(child.stderr(), UNHANDLED);
      assert.ok(records(child, "log").some((r) => r.log === "serve failed"), child.stdout());
    } finally {
      child.kill();
    }
  });

  test(`reliability (${runtime}): SIGTERM with a stuck handler and an SSE stream that ignores the shutdown, no exitOnDrained → forced: the stuck request gets 503 + Connection: close, the stream is cut and its source cancelled, the process ends on its own with exit 3`, TIMEOUT, async () => {
    const { child, port } = await start({ DRAIN_MS: "1000", TIMEOUT_MS: "500" });
    const socks: Sock[] = [];
    try {
      const stuck = await get(port, "/stuck?id=s");
      const sse = await get(port, "/events?id=e");
      socks.push(stuck, sse);
      await waitForRecord(child, "started", "the stuck handler started", "stuck");
      await waitForRecord(child, "started", "the stream started", "events");
      child.kill("SIGTERM");
      assert.equal(await exitOf(child), 3, `stdout:\n${child.stdout()}\nstderr:\n${child.stderr()}`);

      // The client of the stuck request: an answer, then the connection closed.
      await within(stuck.closed, "the stuck request's connection closing");
      const answer = parseResponse(stuck.received(), true);
      assert.equal(answer?.status, 503, stuck.received().toString("latin1"));
      assert.match(answer!.headers.get("connection") ?? "", /close/i);
      // The stream's client: what it had, then the connection closed without the stream's end.
      await within(sse.closed, "the stream's connection closing");
      const stream = parseResponse(sse.received(), true);
      assert.equal(stream?.status, 200);
      assert.match(stream!.body, /data: open e/);
      assert.equal(stream!.complete, false, "a forced stream is cut, never passed off as complete");
      assert.equal(records(child, "streamCancelled").length, 1, "the stream's source was cancelled (its timer cleared)");

      const outcome = records(child, "log").find((r) => r.log === "drain window ran out; force-closing");
      assert.ok(outcome !== undefined, child.stdout());
      assert.equal(records(child, "flushed").length, 1);
      assert.doesNotMatch(child.stderr(), UNHANDLED);
      // The library logs the forced drain once; the runtime prints no stream error of its own,
      // and the cut stream is not logged as a handler's failure (Deno's onError receives it).
      assert.doesNotMatch(child.stderr(), /Drain window of/);
      assert.deepEqual(records(child, "log").filter((r) => r.log === "guarded handler failed"), [], child.stdout());
    } finally {
      for (const s of socks) s.destroy();
      child.kill();
    }
  });

  test(`reliability (${runtime}): SIGTERM with 24 SSE streams that end on context.shutdownSignal → every client sees its stream end whole, the drain is clean, exit 0, and no MaxListenersExceededWarning`, TIMEOUT, async () => {
    const { child, port } = await start({ DRAIN_MS: "5000", TIMEOUT_MS: "1000" });
    const socks: Sock[] = [];
    try {
      for (let i = 0; i < 24; i++) socks.push(await get(port, `/events?honour=1&id=h${i}`));
      await within((async () => {
        while (records(child, "started").length < 24) await new Promise((r) => setTimeout(r, 10));
      })(), "24 streams started");
      child.kill("SIGTERM");
      assert.equal(await exitOf(child), 0, `stdout:\n${child.stdout().slice(-3000)}\nstderr:\n${child.stderr()}`);
      for (const [i, sock] of socks.entries()) {
        await within(sock.closed, `stream h${i} closing`);
        const res = parseResponse(sock.received(), true);
        assert.equal(res?.status, 200);
        assert.equal(res!.complete, true, `stream h${i} ended whole: ${sock.received().toString("latin1").slice(-200)}`);
        assert.match(res!.body, /event: bye/);
      }
      assert.equal(records(child, "streamEnded").length, 24);
      assert.ok(records(child, "log").some((r) => r.log === "draining"));
      assert.ok(!records(child, "log").some((r) => r.log === "drain window ran out; force-closing"), "clean, never forced");
      assert.doesNotMatch(child.stderr(), /MaxListenersExceeded/);
    } finally {
      for (const s of socks) s.destroy();
      child.kill();
    }
  });
});
