// hygiene() on the runtime's own server (Bun.serve, Deno.serve, @hono/node-server's serve), as
// an app not served by serve-hygiene's adapters is: what the chain reads of the request's
// transport is the same whether the guard replaced c.req.raw (a capped body) or not.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { Hono } from "hono";
import { ipRestriction } from "hono/ip-restriction";
import { getConnInfo, hygiene, peerOf, rateLimit } from "../../src/hono/mod.ts";
import { serveHere } from "../support/adapter.ts";
import { createFixedWindowLimiter } from "../../src/core/limits/fixed_window.ts";
import { runtime } from "../support/runtime.ts";
import { ownServer } from "../support/own_server.ts";

describe(`hono: hygiene() on the runtime's own server (${runtime})`, () => {
  test(`hono: a request whose body the guard capped keeps its peer: peerOf and a route's rateLimit key read it as for a GET (${runtime})`, async () => {
    const keys: string[] = [];
    const app = new Hono();
    app.use(hygiene({ loadMonitor: false, bodyLimitBytes: 1024 }));
    app.all("/peer", async (c) => {
      if (c.req.method === "POST") await c.req.text();
      // Where the env is a view of Bun's server (a capped request), its methods keep their identity.
      const env = c.env as { requestIP?: unknown } | undefined;
      return c.json({ peer: peerOf(c)?.address ?? null, stable: env?.requestIP === env?.requestIP });
    });
    // A route's rateLimit with the default client key: what it keys is recorded at its limiter.
    const limited = new Hono();
    limited.use(hygiene({ loadMonitor: false, bodyLimitBytes: 1024 }));
    const limiter = createFixedWindowLimiter({ limit: 100, name: "route" });
    const take = limiter.take.bind(limiter);
    limiter.take = (key, ...rest) => (keys.push(key), take(key, ...rest));
    limited.post("/login", rateLimit({ limiter }), async (c) => c.text(await c.req.text()));
    const server = await ownServer(app.fetch);
    const other = await ownServer(limited.fetch);
    try {
      const get = await (await fetch(`http://127.0.0.1:${server.port}/peer`)).json();
      const post = await (await fetch(`http://127.0.0.1:${server.port}/peer`, { method: "POST", body: "x".repeat(100) })).json();
      assert.match(String(get.peer), /^(::ffff:)?127\.0\.0\.1$/);
      assert.equal(post.peer, get.peer, "the capped request's peer is the original's");
      assert.equal(post.stable, true);
      assert.equal((await fetch(`http://127.0.0.1:${other.port}/login`, { method: "POST", body: "hello" })).status, 200);
      assert.deepEqual(keys, ["127.0.0.1"], "the route keyed the client, not the unknown key");
    } finally {
      await server.close();
      await other.close();
    }
  });

  test(`hono: getConnInfo reads the peer under serve() and under hygiene() on the runtime's own server, so ipRestriction works under both (Hono's per-runtime helpers threw under serve(): a 500 a request) (${runtime})`, async () => {
    const loopback = ["127.0.0.1", "::1", "::ffff:127.0.0.1"];
    const app = (guarded: boolean) => {
      const a = new Hono();
      if (guarded) a.use(hygiene({ loadMonitor: false }));
      a.use("/admin/*", ipRestriction(getConnInfo, { denyList: loopback }));
      a.use("/local/*", ipRestriction(getConnInfo, { allowList: loopback }));
      a.get("/admin/x", (c) => c.text("admin"));
      a.get("/local/x", (c) => c.json(getConnInfo(c)));
      return a;
    };
    const plain = app(false);
    const served = await serveHere((request, info) => plain.fetch(request, info), { loadMonitor: false });
    const own = await ownServer(app(true).fetch);
    try {
      for (const port of [served.address.port, own.port]) {
        const local = await fetch(`http://127.0.0.1:${port}/local/x`);
        assert.equal(local.status, 200);
        const info = await local.json() as { remote: { address?: string; addressType?: string; transport?: string } };
        assert.match(String(info.remote.address), /^(::ffff:)?127\.0\.0\.1$/);
        assert.equal(info.remote.transport, "tcp");
        assert.equal((await fetch(`http://127.0.0.1:${port}/admin/x`)).status, 403);
      }
    } finally {
      await own.close();
      await served.shutdown();
    }
  });
});
