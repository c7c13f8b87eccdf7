// The last resort under the guard: when the guarded fetch itself fails, each adapter answers
// the core's one generic 500 (the guard's own) and logs the failure once.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { createConnectionGate, denyResponse, type Listen, type LogRecord, resolveConfig } from "../../src/core/mod.ts";
import { runtime } from "../support/runtime.ts";

async function listenHere(log: (record: LogRecord) => void): Promise<Listen> {
  if (runtime === "deno") return (await import("../../src/adapters/deno/serve.ts")).listenDeno({ log });
  if (runtime === "bun") return (await import("../../src/adapters/bun/serve.ts")).listenBun({ log });
  return (await import("../../src/adapters/node/server.ts")).listenNode({ log });
}

describe(`adapter fallback (${runtime})`, () => {
  test(`adapter fallback: a guarded fetch that fails is answered with the guard's generic 500 and logged once (${runtime})`, { timeout: 10_000 }, async () => {
    const logs: LogRecord[] = [];
    const listen = await listenHere((record) => logs.push(record));
    const failure = new Error("secret detail");
    const server = await listen(() => Promise.reject(failure), {
      port: 0,
      hostname: "127.0.0.1",
      config: resolveConfig(),
      connections: createConnectionGate(),
    });
    try {
      const res = await fetch(`http://127.0.0.1:${server.address.port}/`);
      const expected = denyResponse(500);
      assert.equal(res.status, 500);
      assert.equal(await res.text(), await expected.text());
      for (const name of ["content-type", "cache-control"]) assert.equal(res.headers.get(name), expected.headers.get(name), name);
      const failed = logs.filter((r) => r.msg === "guarded handler failed");
      assert.equal(failed.length, 1);
      assert.equal(failed[0]!.level, "error");
      assert.equal(failed[0]!.error, failure);
    } finally {
      await server.stopAccepting();
      await server.closeAll();
    }
  });
});
