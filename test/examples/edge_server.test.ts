import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { runtime, startChild } from "../support/runtime.ts";

describe(`examples (${runtime})`, () => {
  test(`edge server: boots on port 0 under ${runtime}, answers once, stops on SIGTERM with exit 0`, async () => {
    const child = startChild("examples/edge-server.ts", { PORT: "0", HOST: "127.0.0.1" });
    try {
      const { port } = JSON.parse(await child.waitForLine(/"listening"/));
      assert.ok(port > 0);
      const res = await fetch(`http://127.0.0.1:${port}/`);
      assert.equal(res.status, 200);
      assert.match(await res.text(), /hello/);
      child.kill("SIGTERM");
      await child.waitForLine(/"stopped"/);
      assert.equal(await child.exited, 0);
    } finally {
      child.kill();
    }
  });

  test(`edge server: an invalid PORT stops startup with a message naming the variable (${runtime})`, async () => {
    const child = startChild("examples/edge-server.ts", { PORT: "eighty" });
    try {
      assert.equal(await child.exited, 2);
      assert.match(child.stderr(), /PORT must be an integer/);
    } finally {
      child.kill();
    }
  });
});
