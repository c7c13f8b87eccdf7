import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { type Host, isServeError, type ServeInfo, serveWith } from "../../src/core/mod.ts";
import { createFakeHost, type FakeHost } from "../support/fake_host.ts";
import { createFakeServer, type FakeServer } from "../support/fake_server.ts";
import { flushMicrotasks } from "../support/flush.ts";

type Fetch = (request: Request, info?: ServeInfo) => Response | Promise<Response>;

interface Setup {
  fake: FakeHost;
  /** The fake host, with exit and setExitCode recorded. */
  host: Host;
  server: FakeServer;
  exitCodes: number[];
  exits: number[];
  /** The Listen: hands back the fake server and keeps the guarded fetch for `fetch`. */
  listen: (fetch: Fetch) => FakeServer;
  fetch: Fetch;
}

function setup(stop: "immediate" | "never" = "immediate"): Setup {
  const fake = createFakeHost();
  const exitCodes: number[] = [];
  const exits: number[] = [];
  const server = createFakeServer({ stop });
  let guarded: Fetch | undefined;
  return {
    fake,
    host: { ...fake.host, setExitCode: (code) => void exitCodes.push(code), exit: (code) => void exits.push(code) },
    server,
    exitCodes,
    exits,
    listen: (fetch) => ((guarded = fetch), server),
    fetch: (request, info) => guarded!(request, info),
  };
}

describe("serve", () => {
  test("serve: a forced drain without exitOnDrained reports exit code 3 through the Host and ends nothing itself", async () => {
    const s = setup("never");
    const handle = await serveWith(s.host, s.listen, () => new Promise<Response>(() => {}), {
      drainTimeoutMs: 1000,
      requestTimeoutMs: Infinity,
      loadMonitor: false,
    });
    const stuck = s.fetch(new Request("http://localhost/"));
    await flushMicrotasks();
    s.fake.signal("SIGTERM");
    await flushMicrotasks();
    s.fake.clock.advance(1000);
    const outcome = await handle.finished;
    await flushMicrotasks();
    assert.equal(outcome.outcome, "forced");
    assert.equal(outcome.stillRunning, 1);
    assert.deepEqual(s.exitCodes, [3]);
    assert.deepEqual(s.exits, [], "no exitOnDrained: the process is left to end on its own");
    // The stuck request was answered, so the runtime closes its connection.
    const res = await stuck;
    assert.equal(res.status, 503);
    assert.equal(res.headers.get("connection"), "close");
  });

  test("serve: a flush failure is never an unhandled rejection: finished still rejects for whoever awaits it, the exit code is 4, and it is logged", async () => {
    const s = setup();
    const handle = await serveWith(s.host, s.listen, () => new Response("ok"), {
      loadMonitor: false,
      onDrained: () => {
        throw new Error("flush broke");
      },
      exitOnDrained: true,
    });
    s.fake.signal("SIGTERM");
    await assert.rejects(handle.finished, (error: unknown) => isServeError(error) && error.kind === "flush");
    await flushMicrotasks();
    assert.deepEqual(s.exitCodes, [4]);
    s.fake.clock.advance(0);
    assert.deepEqual(s.exits, [4]);
    assert.ok(s.fake.logs.some((r) => r.msg === "serve failed" && r.kind === "flush"), JSON.stringify(s.fake.logs));
  });

  test("serve: a flush hook still running past flushMarginMs ends with a flush ServeError and exit code 4", async () => {
    const s = setup();
    const handle = await serveWith(s.host, s.listen, () => new Response("ok"), { loadMonitor: false, flushMarginMs: 1_000, onDrained: () => new Promise(() => {}) });
    s.fake.signal("SIGTERM");
    await flushMicrotasks();
    let settled = false;
    const finished = handle.finished.then(() => undefined, (error: unknown) => error).finally(() => (settled = true));
    s.fake.clock.advance(999);
    await flushMicrotasks();
    assert.equal(settled, false);
    s.fake.clock.advance(1);
    const error = await finished;
    assert.ok(isServeError(error) && error.kind === "flush" && error.outcome?.outcome === "clean");
    await flushMicrotasks();
    assert.deepEqual(s.exitCodes, [4]);
  });

  // A review: node:http took port "abc" as a Unix socket's path and answered there; an empty
  // hostname listened on every interface on Node and Bun. Refused before anything listens.
  test("serve: a port that is no integer from 0 to 65535, or an empty hostname, is refused before anything listens", async () => {
    for (const port of ["abc", "8080", -1, 65536, 1.5, NaN, null]) {
      let listened = false;
      const s = setup();
      await assert.rejects(serveWith(s.host, (f) => ((listened = true), s.listen(f)), () => new Response("ok"), { loadMonitor: false, port } as never), {
        name: "RangeError",
        message: `Cannot serve as "port" must be an integer from 0 to 65535: current value is ${typeof port === "string" ? `"${port}"` : String(port)}`,
      });
      assert.equal(listened, false);
    }
    for (const hostname of ["", 0]) {
      const s = setup();
      await assert.rejects(serveWith(s.host, s.listen, () => new Response("ok"), { loadMonitor: false, hostname } as never), { name: "TypeError", message: /^Cannot serve as "hostname" must be a non-empty string/ });
    }
    const s = setup();
    const handle = await serveWith(s.host, s.listen, () => new Response("ok"), { loadMonitor: false, port: 65535, hostname: "::" });
    assert.equal((await handle.shutdown()).outcome, "clean");
  });

  test("serve: a listener failure rejects finished with an io ServeError and reports exit code 1", async () => {
    const s = setup();
    const handle = await serveWith(s.host, s.listen, () => new Response("ok"), { loadMonitor: false });
    s.server.fail(new Error("EADDRINUSE, later"));
    await assert.rejects(handle.finished, (error: unknown) => isServeError(error) && error.kind === "io");
    await flushMicrotasks();
    assert.deepEqual(s.exitCodes, [1]);
  });

  test("serve: a failure after the server started (onListen threw) closes it: nothing is left listening; a bad onDrained is refused before it listens", async () => {
    const s = setup();
    await assert.rejects(serveWith(s.host, s.listen, () => new Response("ok"), { loadMonitor: false, onListen: () => { throw new Error("listen hook failed"); } }));
    await flushMicrotasks();
    assert.equal(s.server.stopAcceptingCalls, 1);
    assert.equal(s.server.closeAllCalls, 1);
    const bad = setup();
    let listened = 0;
    await assert.rejects(serveWith(bad.host, (fetch) => (listened++, bad.listen(fetch)), () => new Response("ok"), { loadMonitor: false, onDrained: "oops" as never }), /"onDrained" must be a function/);
    assert.equal(listened, 0);
  });

  test("serve: a clean drain leaves the process's exit code alone", async () => {
    const s = setup();
    const handle = await serveWith(s.host, s.listen, () => new Response("ok"), { loadMonitor: false });
    const outcome = await handle.shutdown("done");
    await flushMicrotasks();
    assert.equal(outcome.outcome, "clean");
    assert.deepEqual(s.exitCodes, []);
  });
});
