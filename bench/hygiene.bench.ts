// The hygiene() middleware's cost in process: a Hono app behind hygiene() with every gate on
// and none tripping, against the same app behind one no-op middleware (Hono's own cost of a
// middleware). The middleware is the guard's asynchronous path (Hono's `next()` is a promise):
// the deadline armed, the answer a promise, the work tracked for a forced drain.
import { Hono, type MiddlewareHandler } from "hono";
import { createFixedWindowLimiter, createSystemClock, type Host } from "../src/core/mod.ts";
import { hygiene } from "../src/hono/mod.ts";
import { answering, measureAsync, report } from "./_harness.ts";

const request = new Request("http://localhost/");
// What serve-hygiene's adapters hand Hono as its env: here only the peer, which the keyed gates read.
const env = { peer: { address: "127.0.0.1", port: 40000 } };
// A Host whose RSS is far below the ceiling and whose signals never fire: every gate is on.
const host: Host = { clock: createSystemClock(), rss: () => 50_000_000, onShutdownSignal: () => () => {} };
const app = (middleware: MiddlewareHandler) => new Hono().use(middleware).get("/", (c) => c.text("hello"));

const noop = app(async (_c, next) => {
  await next();
});
const guarded = hygiene(
  {
    concurrencyLimit: 1024,
    requestTimeoutMs: 20_000,
    bodyLimitBytes: 1 << 20,
    memory: { ceilingBytes: 1 << 30 },
    // The load monitor's drift probe would read a loop of awaits as stalled (nothing yields to
    // timers for long stretches) and shed; a server's requests arrive as I/O events instead.
    loadMonitor: false,
    rateLimits: [{ limiter: createFixedWindowLimiter({ limit: 1e12, windowMs: 60_000, name: "ip" }), scope: "ip" }],
    inFlightPerKey: { perKey: 1024 },
    shutdown: new AbortController(),
  },
  host,
);
const withHygiene = app(guarded);

const results = await measureAsync(
  [
    { name: "Hono + one no-op middleware", run: answering(() => noop.fetch(request, env)) },
    { name: "Hono + hygiene(), every gate on", run: answering(() => withHygiene.fetch(request, env)) },
  ],
  { runs: 7 },
);
report("hygiene() in process", results, "Hono + one no-op middleware");
guarded.guard.dispose();
