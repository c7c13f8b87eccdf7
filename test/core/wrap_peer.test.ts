// guard.wrap() run by the runtime's own server: the wrapped fetch gets the runtime's second
// argument (Deno's handler info, Bun's server, @hono/node-server's env), not a ServeInfo. A
// review: every client's key was then "unknown" — one per-IP budget for all clients.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { createGuard } from "../../src/core/guard.ts";
import { createFixedWindowLimiter } from "../../src/core/limits/fixed_window.ts";
import { runtime } from "../support/runtime.ts";

type Fetch = (request: Request, info?: never) => Promise<Response>;

/** Serves `fetch` on port 0 with the runtime's own server, as its entry points do. */
async function runtimeServer(fetch: Fetch): Promise<{ port: number; stop(): Promise<void> }> {
  if (runtime === "deno") {
    const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, fetch as never);
    return { port: server.addr.port, stop: () => server.shutdown() };
  }
  if (runtime === "bun") {
    const server = (globalThis as unknown as { Bun: { serve(o: object): { port: number; stop(force: boolean): Promise<void> } } }).Bun.serve({ port: 0, hostname: "127.0.0.1", fetch });
    return { port: server.port, stop: () => server.stop(true) };
  }
  const { serve } = await import("@hono/node-server");
  return await new Promise((resolve) => {
    const server = serve({ fetch: fetch as never, port: 0, hostname: "127.0.0.1" }, (info) =>
      resolve({ port: info.port, stop: () => new Promise<void>((done) => (server.close(() => done()), (server as unknown as { closeAllConnections(): void }).closeAllConnections())) }));
  });
}

describe(`guard.wrap under the runtime's own server (${runtime})`, () => {
  test(`guard.wrap: the client key is the peer's address from the ${runtime} server's own second argument, and per-IP limits count each client`, { timeout: 15_000 }, async () => {
    const guard = createGuard({ loadMonitor: false, rateLimits: [{ limiter: createFixedWindowLimiter({ limit: 2, windowMs: 60_000 }) }] });
    const server = await runtimeServer(guard.wrap((_request, { context, peer }) => new Response(`${context.key} ${peer?.address}`)) as Fetch);
    try {
      const url = `http://127.0.0.1:${server.port}/`;
      const first = await fetch(url);
      assert.equal(await first.text(), "127.0.0.1 127.0.0.1");
      await (await fetch(url)).text();
      assert.equal((await fetch(url)).status, 429, "this client's budget, spent");
    } finally {
      await server.stop();
      guard.dispose();
    }
  });

  test("guard.wrap: the peer is read from each shape when asked, and not at all when nobody asks", async () => {
    const guard = createGuard({ loadMonitor: false });
    let asked = 0;
    const requestIP = () => (asked++, { address: "2001:db8::1", port: 1, family: "IPv6" });
    const fetch = guard.wrap((_r, { peer }) => new Response(String(peer?.address)));
    const quiet = guard.wrap(() => new Response("no peer read"));
    try {
      const get = async (f: typeof fetch, info: object) => (await f(new Request("http://x/"), info as never)).text();
      assert.equal(await get(quiet, { requestIP }), "no peer read");
      assert.equal(asked, 0, "Bun's requestIP (a system call) is not made for nothing");
      assert.equal(await get(fetch, { requestIP }), "2001:db8::1");
      assert.equal(await get(fetch, { remoteAddr: { hostname: "192.0.2.7", port: 9 }, completed: Promise.resolve() }), "192.0.2.7");
      assert.equal(await get(fetch, { incoming: { socket: { remoteAddress: "198.51.100.3", remotePort: 5, remoteFamily: "IPv4" } } }), "198.51.100.3");
      assert.equal(await get(fetch, { peer: { address: "203.0.113.1" } }), "203.0.113.1");
      assert.equal(await get(fetch, {}), "undefined");
    } finally {
      guard.dispose();
    }
  });
});
