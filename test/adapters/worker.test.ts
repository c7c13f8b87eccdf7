// serve() inside a worker thread, in a real child process (test/fixtures/worker_serve.ts).
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { runtime, startChild } from "../support/runtime.ts";

async function run(mode: "manual" | "default") {
  const child = startChild("test/fixtures/worker_serve.ts", { WORKER_MODE: mode });
  try {
    const line = await child.waitForLine(/"listening"/, 30_000);
    assert.equal(await child.exited, 0);
    return JSON.parse(line) as { listening: boolean; failed?: string; logs?: { msg: string; error: string }[]; answer?: string; finished?: string };
  } finally {
    child.kill();
  }
}

describe(`serve() in a worker thread (${runtime})`, () => {
  test(`worker: serve() listens in a worker thread; a manual controller stopped by the main thread drains it clean, the request in flight answered (${runtime}; Deno's process.channel throws in a Worker, and serve() rejected)`, async () => {
    const got = await run("manual");
    assert.equal(got.failed, undefined, `serve() failed: ${got.failed}`);
    assert.equal(got.listening, true);
    assert.equal(got.answer, "200 slow done");
    assert.equal(got.finished, "clean");
  });

  if (runtime === "deno") {
    test(`worker: Deno delivers SIGTERM to a worker's listener: the default controller drains it clean, the request in flight answered (deno)`, async () => {
      const got = await run("default");
      assert.equal(got.listening, true, `serve() failed: ${got.failed}`);
      assert.deepEqual(got.logs, []);
      assert.equal(got.answer, "200 slow done");
      assert.equal(got.finished, "clean");
    });
  } else {
    test(`worker: ${runtime} delivers no signal to a worker thread: the default controller's install is logged, saying to use a manual one, and SIGTERM leaves the server serving (${runtime})`, async () => {
      const got = await run("default");
      assert.equal(got.listening, true, `serve() failed: ${got.failed}`);
      const failures = (got.logs ?? []).filter((l) => l.msg === "signal handler install failed");
      assert.equal(failures.length, 2, `SIGTERM and SIGINT: ${JSON.stringify(got.logs)}`);
      for (const f of failures) assert.match(f.error, /not delivered to a worker thread.*manual controller/);
      assert.equal(got.answer, "200 slow done");
      assert.equal(got.finished, "not finished", "nothing in the worker heard the signal");
    });
  }
});
