// Probe (all three runtimes): an upstream that stops answering, beside a fast route. `/up`
// awaits an upstream that answers in 20 ms, hangs from 3 s to 11 s into the run (its requests
// are answered when it comes back), then answers in 20 ms again; `/fast` answers at once.
// With `--slow=MS` it does not hang but answers in MS ms from 3 s to 11 s (a brownout).
// A Node client in a child process keeps 200 closed-loop clients on `/up` and sends 50 requests
// a second to `/fast` for 26 s (keep-alive, latency from the send). The modes:
//   serve         serve-hygiene's `serve()` with its defaults
//   hygiene       a Hono app with `app.use(hygiene())`, no Host (the runtime's own server runs it)
//   hygiene-host  the same, `hygiene({}, host)` given the runtime's Host (createNodeHost, …)
//   none          the Hono app alone
// Reported, per second from 4 s: the fast route's p99 and the 503s of both routes, and `/up`'s
// answers a second; then, during the outage (4–10 s) and after it (12–25 s), the seconds in
// which the fast route's p99 passed 100 ms.
// Run (loopback only):
//   node --import tsx scripts/probes/upstream_outage.ts serve|hygiene|hygiene-host|none [--slow=2000]
//   deno run -A scripts/probes/upstream_outage.ts …
//   bun run scripts/probes/upstream_outage.ts …
// Measured 2026-12-07 (Node 20.20, Deno 2.9.6, Bun 1.4.5; 2-core machine; README "Concurrency"
// and "A worked example"; two runs each, the library of 3c8a298 against 15469a6): the hang under
// `serve()` on Node — the fast route's p99 over 100 ms (~480 ms: the adaptive limit collapsing
// to 15–33, then lent back) in 2–4 of the hang's 7 seconds and 8–9 of the 14 after; now in none
// of the hang's and 0–2 of the 14 after over five runs (a single second at ~340 ms);
// Deno and Bun 0–1 either way. A brownout at 2 s (`--slow=2000`): before, over 100 ms in 1–3 of
// its seconds on Node and Deno (0–1 on Bun), and on Node in 6 and 10 of the 14 after; now 0
// during it, 0–1 after. `hygiene()` without a Host (no CPU reading, no load monitor) refused
// 306–327 of the fast route's ~350 requests during the hang on Node and Bun, ~1,800 on `/up`;
// given the runtime's Host, none.

import { spawn } from "node:child_process";

declare const Deno: { serve: (o: object, h: (r: Request) => Response | Promise<Response>) => { addr: { port: number } } } | undefined;
declare const Bun: { serve: (o: object) => { port: number } } | undefined;

const runtime = typeof Deno !== "undefined" ? "deno" : typeof Bun !== "undefined" ? "bun" : "node";
const MODES = ["serve", "hygiene", "hygiene-host", "none"];
const mode = process.argv.slice(2).find((a) => MODES.includes(a)) ?? "serve";
const SECONDS = 26;
const HANG_FROM_MS = 3_000;
const HANG_TO_MS = 11_000;
const SLOW_MS = Number(process.argv.slice(2).find((a) => a.startsWith("--slow="))?.slice(7) ?? NaN);

let t0 = 0;
// The upstream: 20 ms, or (while it hangs) until it is back.
function upstream(signal: AbortSignal | undefined): Promise<void> {
  if (t0 === 0) t0 = performance.now();
  const at = performance.now() - t0;
  const wait = at >= HANG_FROM_MS && at < HANG_TO_MS ? (SLOW_MS >= 0 ? SLOW_MS : HANG_TO_MS - at) : 20;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, wait);
    signal?.addEventListener("abort", () => (clearTimeout(timer), reject(signal.reason)), { once: true });
  });
}
const route = async (request: Request, signal?: AbortSignal): Promise<Response> => {
  if (new URL(request.url).pathname === "/up") await upstream(signal);
  return new Response("ok");
};

async function start(): Promise<number> {
  const adapter = await import(`../../src/adapters/${runtime}/mod.ts`);
  if (mode === "serve") {
    const handle = await adapter.serve((r: Request, info: { context: { signal: AbortSignal } }) => route(r, info.context.signal), { port: 0, hostname: "127.0.0.1", log: () => {} });
    return handle.address.port as number;
  }
  const { Hono } = await import("hono");
  const { hygiene, hygieneContext } = await import("../../src/hono/mod.ts");
  const app = new Hono();
  if (mode !== "none") {
    const host = mode === "hygiene-host" ? { node: adapter.createNodeHost, bun: adapter.createBunHost, deno: adapter.createDenoHost }[runtime]() : undefined;
    app.use(hygiene({ log: () => {} }, host));
  }
  app.all("*", (c) => route(c.req.raw, mode === "none" ? c.req.raw.signal : hygieneContext(c)?.signal));
  if (runtime === "deno") return Deno!.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, app.fetch).addr.port;
  if (runtime === "bun") return Bun!.serve({ port: 0, hostname: "127.0.0.1", fetch: app.fetch }).port;
  const { serve } = await import("@hono/node-server");
  return await new Promise<number>((resolve) => serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" }, (info) => resolve(info.port)));
}

// The client: 200 closed-loop on /up, 50 a second on /fast; per second of sending, by route:
// answers, 503s, p99.
const CLIENT = `
const http = require("node:http");
const [port, seconds] = process.argv.slice(1).map(Number);
const agent = new http.Agent({ keepAlive: true, maxSockets: 1000 });
const rows = [];
const t0 = performance.now();
const row = (s) => (rows[s] ??= { up: 0, up503: 0, fast: [], fast503: 0 });
const get = (path) => new Promise((resolve) => {
  const at = performance.now();
  http.get({ host: "127.0.0.1", port, path, agent }, (res) => {
    res.resume();
    res.on("end", () => {
      const r = row(Math.floor((at - t0) / 1000));
      if (path === "/up") res.statusCode === 503 ? r.up503++ : r.up++;
      else res.statusCode === 503 ? r.fast503++ : r.fast.push(performance.now() - at);
      resolve();
    });
  }).on("error", () => resolve());
});
let stop = false;
const loops = Array.from({ length: 200 }, async () => { while (!stop) await get("/up"); });
const fast = [];
const tick = setInterval(() => fast.push(get("/fast")), 20);
setTimeout(async () => {
  stop = true;
  clearInterval(tick);
  await Promise.all([...loops, ...fast]);
  const out = [];
  const slowDuring = [], slow = [];
  for (let s = 4; s < seconds; s++) {
    const r = row(s);
    r.fast.sort((a, b) => a - b);
    const p99 = Math.round(r.fast[Math.min(r.fast.length - 1, Math.floor(0.99 * r.fast.length))] ?? NaN);
    if (p99 > 100) (s < 11 ? slowDuring : s >= 12 ? slow : []).push(s);
    out.push(s + "s: /fast p99 " + p99 + " ms, 503 " + r.fast503 + "; /up " + r.up + "/s, 503 " + r.up503);
  }
  const during = rows.slice(4, 11);
  const list = (xs) => xs.length + (xs.length ? " (" + xs.join(", ") + ")" : "");
  console.log(out.join("\\n"));
  console.log("during the outage (4-10 s): /fast 503s " + during.reduce((n, r) => n + (r?.fast503 ?? 0), 0) + ", /up 503s " + during.reduce((n, r) => n + (r?.up503 ?? 0), 0) + "; seconds with the fast route's p99 over 100 ms: " + list(slowDuring));
  console.log("after it (12-" + (seconds - 1) + " s): seconds with the fast route's p99 over 100 ms: " + list(slow));
  agent.destroy();
}, seconds * 1000);
`;

const port = await start();
const out = await new Promise<string>((resolve, reject) => {
  const child = spawn("node", ["-e", CLIENT, String(port), String(SECONDS)]);
  let text = "";
  child.stdout.on("data", (d: Uint8Array) => void (text += new TextDecoder().decode(d)));
  child.stderr.on("data", (d: Uint8Array) => void (text += new TextDecoder().decode(d)));
  child.on("error", reject);
  child.on("close", () => resolve(text.trim()));
});
console.log(`${runtime} ${mode}:\n${out}`);
process.exit(0);
