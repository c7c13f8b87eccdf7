import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { runtime, startChild } from "../support/runtime.ts";

describe(`host (${runtime})`, () => {
  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    test(`host: a real ${signal} reaches the listener of the ${runtime} Host, which reads a real RSS`, async () => {
      const child = startChild("test/fixtures/host_signal.ts");
      try {
        const ready = JSON.parse(await child.waitForLine(/"ready"/));
        assert.ok(Number.isInteger(ready.rss) && ready.rss > 1_000_000, `rss ${ready.rss}`);
        child.kill(signal);
        const got = JSON.parse(await child.waitForLine(/"got"/));
        assert.equal(got.got, signal);
        // The handler uninstalled itself and cleared the keep-alive: the process ends on its own, exit 0.
        assert.equal(await child.exited, 0);
      } finally {
        child.kill();
      }
    });
  }
});
