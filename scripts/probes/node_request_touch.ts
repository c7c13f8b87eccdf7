// Probe (Node): what of @hono/node-server's lightweight Request does the guard make it build?
// Run: node --import tsx scripts/probes/node_request_touch.ts
// The request it hands over builds its Headers (headersKey), its AbortController
// (abortControllerKey) and the full undici Request (requestCache) only when those are touched.
// This serves with every gate on and nothing tripping, sends a plain GET and a POST, then a
// GET and a POST refused by the concurrency limit, and prints which of the three each request
// had built by the time its answer was ready (the handler itself touches nothing).
// Measured on node 20.20.2, @hono/node-server 2.1.9: every request here, admitted GET or
// refused GET and POST, builds nothing; only the admitted POST builds the full Request (its
// body is handed on through the body cap's counting stream). Before issue 13 every request
// built its AbortController (the per-key in-flight gate read request.signal).
import { createNodeHost } from "../../src/adapters/node/host.ts";
import { listenNode } from "../../src/adapters/node/server.ts";
import { createFixedWindowLimiter } from "../../src/core/limits/fixed_window.ts";
import { type Listen, serveWith } from "../../src/core/mod.ts";

const built = (request: Request) =>
  Object.getOwnPropertySymbols(request)
    .map((s) => s.description)
    .filter((d) => d === "headersKey" || d === "abortControllerKey" || d === "requestCache")
    .join(", ") || "nothing";

const seen: string[] = [];
let hold: Promise<void> | undefined;
let release = () => {};
const node = listenNode({ log: () => {} });
// The adapter's own listen, with a look at each request the adapter hands to the guard.
const listen: Listen = (fetch, settings) =>
  node((request, info) => {
    const answered = fetch(request, info);
    void Promise.resolve(answered).then((res) => seen.push(`${request.method} answered ${res.status}: the request had built ${built(request)}`));
    return answered;
  }, settings);
const host = createNodeHost({});
const handle = await serveWith(host, listen, async () => {
  if (hold !== undefined) await hold;
  return new Response("ok");
}, {
  port: 0,
  concurrencyLimit: 1,
  requestTimeoutMs: 5_000,
  bodyLimitBytes: 1 << 20,
  memory: { ceilingBytes: 2 ** 40 },
  rateLimits: [{ limiter: createFixedWindowLimiter({ limit: 1000 }) }],
  inFlightPerKey: { perKey: 16 },
  onDeny: (e) => seen.push(`refused (${e.layer}/${e.reason})`),
  log: () => {},
});
const url = `http://127.0.0.1:${handle.address.port}/`;
await (await fetch(url)).text();
await (await fetch(url, { method: "POST", body: "hello" })).text();
hold = new Promise<void>((r) => (release = r));
const busy = fetch(url).then((r) => r.text());
await new Promise((r) => setTimeout(r, 100));
await (await fetch(url)).text();
await (await fetch(url, { method: "POST", body: "hello" })).text();
release();
await busy;
for (const line of seen) console.log(`probe: ${line}`);
await handle.shutdown("probe done");
