// Two copies of the package in one process (a bundled sub-app or a dependency bringing its
// own): route middleware from one copy under the other copy's hygiene(). The context was kept
// under a symbol private to each copy, so the other copy's bodyLimit() answered 500 ("no
// serve-hygiene context") and its hygieneContext() returned undefined.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { cpSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { Hono } from "hono";
import { hygiene, rateLimit } from "../../src/hono/mod.ts";
import { createScopedLimiter } from "../../src/core/limits/scopes.ts";
import { ALLOW, createFakeBackend } from "../support/fake_store.ts";
import { flushMicrotasks } from "../support/flush.ts";
import type * as HonoMod from "../../src/hono/mod.ts";
import type * as RootMod from "../../src/mod.ts";
import type { DenyEvent } from "../../src/core/events.ts";
import { repoRoot, runtime } from "../support/runtime.ts";

describe(`hono: two copies of the package (${runtime})`, () => {
  test("route middleware from another copy finds the context hygiene() put on the request", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sh-copy-"));
    try {
      cpSync(join(repoRoot, "src"), join(dir, "src"), { recursive: true });
      symlinkSync(join(repoRoot, "node_modules"), join(dir, "node_modules"), "dir");
      const other = (await import(pathToFileURL(join(dir, "src/hono/mod.ts")).href)) as typeof HonoMod;
      const otherRoot = (await import(pathToFileURL(join(dir, "src/mod.ts")).href)) as typeof RootMod;
      assert.notEqual(other.hygiene, hygiene, "a second copy");
      const denied: DenyEvent[] = [];
      const app = new Hono();
      app.use(hygiene({ bodyLimitBytes: 1_000, onDeny: (e) => denied.push(e) }));
      app.post("/upload", other.bodyLimit(10), async (c) => c.text(`read ${(await c.req.text()).length}`));
      app.get("/ctx", (c) => c.text(String(other.hygieneContext(c)?.signal instanceof AbortSignal)));
      const limiter = otherRoot.createFixedWindowLimiter({ limit: 1, windowMs: 60_000 });
      app.get("/rl", other.rateLimit({ limiter }), (c) => c.text("ok"));

      const big = await app.fetch(new Request("http://localhost/upload", { method: "POST", body: "a".repeat(100), headers: { "content-length": "100" } }));
      assert.equal(big.status, 413);
      await big.body?.cancel();
      const small = await app.fetch(new Request("http://localhost/upload", { method: "POST", body: "abc" }));
      assert.equal(await small.text(), "read 3");
      assert.equal(await (await app.fetch(new Request("http://localhost/ctx"))).text(), "true");
      const statuses = [];
      for (let i = 0; i < 2; i++) {
        const res = await app.fetch(new Request("http://localhost/rl"));
        statuses.push(res.status);
        await res.body?.cancel();
      }
      assert.deepEqual(statuses, [200, 429]);
      // The other copy's refusals reach this copy's guard's sinks.
      assert.deepEqual(denied.map((e) => [e.layer, e.status]), [["body", 413], ["rate", 429]]);

      // A shared limiter (one with a store) from the other copy: a route's limiter and a scope
      // here, asking its store (a review: refused at construction as "must be a rate limiter").
      const backend = createFakeBackend();
      const shared = otherRoot.createFixedWindowLimiter({ name: "api", limit: 5, windowMs: 60_000, store: otherRoot.createRateStore(backend) });
      const app2 = new Hono();
      app2.use(hygiene());
      app2.get("/shared", rateLimit({ limiter: shared }), (c) => c.text("ok"));
      const viaRoute = app2.fetch(new Request("http://localhost/shared"));
      await flushMicrotasks();
      backend.calls.at(-1)!.resolve([ALLOW(4)]);
      assert.equal((await viaRoute).status, 200);
      const scoped = createScopedLimiter({ scopes: [{ name: "api", limiter: shared }] });
      const taken = scoped.take(new Request("http://localhost/"));
      await flushMicrotasks();
      backend.calls.at(-1)!.resolve([ALLOW(3)]);
      assert.equal((await taken).allowed, true);
      assert.equal(backend.calls.length, 2);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
