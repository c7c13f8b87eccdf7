import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { runtime, startChild } from "../support/runtime.ts";
import { collectGarbage } from "../support/memory.ts";
import { createBunHost } from "../../src/adapters/bun/mod.ts";
import { createDenoHost } from "../../src/adapters/deno/mod.ts";
import { createNodeHost } from "../../src/adapters/node/mod.ts";

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

  test(`host: many Node Hosts listening add one process listener a signal, and none once they stop${runtime === "node" ? "" : ` (node only; skipped on ${runtime})`}`, { skip: runtime !== "node" }, () => {
    const before = ["SIGTERM", "SIGINT"].map((s) => process.listenerCount(s));
    const uninstall = Array.from({ length: 12 }, () => createNodeHost().onShutdownSignal(() => {}));
    assert.deepEqual(["SIGTERM", "SIGINT"].map((s) => process.listenerCount(s)), before.map((n) => n + 1));
    for (const u of uninstall) u();
    assert.deepEqual(["SIGTERM", "SIGINT"].map((s) => process.listenerCount(s)), before);
  });

  test(`host: the ${runtime} Host reads the process's CPU time, which grows with work done (the adaptive limit tells work queued for the CPU from work that waits by it)`, () => {
    const host = runtime === "deno" ? createDenoHost() : runtime === "bun" ? createBunHost() : createNodeHost();
    const before = host.cpuMs!()!;
    const end = performance.now() + 30;
    while (performance.now() < end);
    const after = host.cpuMs!()!;
    assert.ok(Number.isFinite(before) && before > 0, `${before}`);
    assert.ok(after - before >= 15, `30 ms of work read as ${after - before} ms of CPU`);
    // The cgroup's quota, in cores, where one is set and readable (none here reads undefined).
    const cores = host.cpuCores!();
    assert.ok(cores === undefined || (typeof cores === "number" && cores > 0), `${cores}`);
  });

  test(`host: the ${runtime} Host's memory figure (live memory; RSS on Bun) grows with held buffers and falls once they are collected`, () => {
    const host = runtime === "deno" ? createDenoHost() : runtime === "bun" ? createBunHost() : createNodeHost();
    // Offered exactly where the runtime lets a process ask: Bun always, V8 with --expose-gc.
    const exposed = typeof (globalThis as { gc?: unknown }).gc === "function";
    assert.equal(typeof host.collectGarbage === "function", runtime === "bun" || exposed);
    const collect = () => (host.collectGarbage !== undefined ? host.collectGarbage() : assert.ok(collectGarbage(), "a forced collection"));
    // Bun gives freed pages back, so its RSS is the figure; V8 keeps them, so live memory is.
    assert.equal(host.liveBytes === undefined, runtime === "bun");
    const figure = () => (host.liveBytes ?? host.rss)()!;
    collect();
    const before = figure();
    assert.ok(Number.isFinite(before) && before > 0, `figure ${before}`);
    // Live memory is part of what is resident. (On Bun the figure is RSS itself: a second reading
    // may be a few pages lower, as the collection it just ran hands pages back.)
    if (host.liveBytes !== undefined) assert.ok(before <= host.rss()!, `figure ${before}, rss ${host.rss()}`);
    let hoard: Uint8Array[] = [];
    for (let i = 0; i < 1024; i++) hoard.push(new Uint8Array(65536).fill(i & 255)); // 64 MB in 64 KiB buffers
    const held = figure();
    assert.ok(held - before > 48 * 1048576, `grew by ${held - before}`);
    assert.equal(hoard.length, 1024);
    hoard = [];
    // Twice: V8 frees array buffers' memory in a sweep that the next collection completes.
    collect();
    collect();
    const after = figure();
    assert.ok(held - after > 48 * 1048576, `fell by ${held - after}`);
  });
});
