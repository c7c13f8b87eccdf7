// Probe (all three runtimes): does the load monitor refuse at light load when every request is
// followed by a garbage-collection pause? Each request builds ~1 MB of JSON and parses it back
// (a few ms of work, then a 40–75 ms pause on Deno as the heap is collected), 20 a second for
// 10 s from a Node client in a child process (16 keep-alive sockets, requests sent on a fixed
// schedule, latency from the send), so the server uses well under a core. `lib` serves it with
// serve-hygiene's `serve()` and its defaults; `none` with the runtime's own server, no library.
// Reported: answers by status, refusals by layer and reason, latency p50 / p99 / max, and the
// server's CPU (every thread) as a share of one core over the run.
// Run (loopback only):
//   node --import tsx scripts/probes/gc_pauses.ts lib|none
//   deno run -A scripts/probes/gc_pauses.ts lib|none
//   bun run scripts/probes/gc_pauses.ts lib|none
// Also printed: the four slowest answers, each with when it was sent (ms into the run).
// Measured 2026-12-07 (Deno 2.9.6, Node 20.20, Bun 1.4.5; 2-core machine; the README's
// capability table, the load monitor's row): on Deno, before the held path read the process's
// CPU time, p99 167–510 ms, max 282–560, a 503 after a 500 ms hold in 3 of 5 runs; after, none
// refused in 6 runs, p99 62–68 and max 64–68 in five (the sixth 232 / 472: a request held
// ~450 ms 0.75 s in); the runtime's own server 40–78 / 53–86; ~35 % of a core. Node (p99 64–79, ~58 % of a core) and
// Bun (28–36) never refused.

import { spawn } from "node:child_process";

declare const Deno: { serve: (o: object, h: (r: Request) => Response | Promise<Response>) => { addr: { port: number } } } | undefined;
declare const Bun: { serve: (o: object) => { port: number } } | undefined;

const runtime = typeof Deno !== "undefined" ? "deno" : typeof Bun !== "undefined" ? "bun" : "node";
const mode = process.argv.slice(2).find((a) => a === "lib" || a === "none") ?? "lib";
const RATE = 20;
const SECONDS = 10;
const KB = 1000;

function work(): Response {
  const items = Array.from({ length: Math.floor((KB * 1024) / 60) }, (_, i) => ({ id: i, name: `item-${i}`, v: Math.random(), tags: ["a", "b"] }));
  const text = JSON.stringify(items);
  const back = JSON.parse(text) as unknown[];
  return new Response(JSON.stringify({ n: back.length, len: text.length }));
}

const denials: Record<string, number> = {};
async function start(): Promise<number> {
  if (mode === "lib") {
    const { serve } = await import(`../../src/adapters/${runtime}/mod.ts`);
    const handle = await serve(work, {
      port: 0,
      hostname: "127.0.0.1",
      log: () => {},
      onDeny: (e: { layer: string; reason: string }) => void (denials[`${e.layer}/${e.reason}`] = (denials[`${e.layer}/${e.reason}`] ?? 0) + 1),
    });
    return handle.address.port as number;
  }
  if (runtime === "deno") return Deno!.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, work).addr.port;
  if (runtime === "bun") return Bun!.serve({ port: 0, hostname: "127.0.0.1", fetch: work }).port;
  const { createServer } = await import("node:http");
  const s = createServer((_req, res) => void work().text().then((body) => res.end(body)));
  await new Promise<void>((resolve) => s.listen(0, "127.0.0.1", resolve));
  return (s.address() as { port: number }).port;
}

// The client: RATE requests a second for SECONDS on a fixed schedule, then waits for the answers.
const CLIENT = `
const http = require("node:http");
const [port, rate, seconds] = process.argv.slice(1).map(Number);
const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
const statuses = {}, lat = [], slow = [];
let sent = 0, done = 0;
const t0 = performance.now();
const tick = setInterval(() => {
  const due = Math.min(rate * seconds, Math.floor(((performance.now() - t0) * rate) / 1000));
  while (sent < due) {
    sent++;
    const at = performance.now();
    http.get({ host: "127.0.0.1", port, path: "/json", agent }, (res) => {
      res.resume();
      res.on("end", () => { statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1; lat.push(performance.now() - at); slow.push([Math.round(at - t0), Math.round(performance.now() - at)]); done++; });
    }).on("error", (e) => { statuses[e.code] = (statuses[e.code] ?? 0) + 1; done++; });
  }
  if (sent >= rate * seconds) clearInterval(tick);
}, 5);
const end = setInterval(() => {
  if (sent < rate * seconds || done < sent) return;
  clearInterval(end);
  lat.sort((a, b) => a - b);
  const p = (q) => Math.round(lat[Math.min(lat.length - 1, Math.floor(q * lat.length))]);
  slow.sort((a, b) => b[1] - a[1]);
  console.log(JSON.stringify({ statuses, p50: p(0.5), p99: p(0.99), max: Math.round(lat[lat.length - 1]), slowest: slow.slice(0, 4).map(([at, ms]) => ms + " ms at " + at) }));
  agent.destroy();
}, 50);
`;

const port = await start();
const cpu0 = process.cpuUsage();
const wall0 = performance.now();
const out = await new Promise<string>((resolve, reject) => {
  const child = spawn("node", ["-e", CLIENT, String(port), String(RATE), String(SECONDS)]);
  let text = "";
  child.stdout.on("data", (d: Uint8Array) => void (text += new TextDecoder().decode(d)));
  child.on("error", reject);
  child.on("close", () => resolve(text.trim()));
});
const used = process.cpuUsage(cpu0);
const cpuShare = (used.user + used.system) / 1000 / (performance.now() - wall0);
console.log(`${runtime} ${mode}: ${out}; refusals ${JSON.stringify(denials)}; server CPU ${Math.round(cpuShare * 100)} % of a core`);
process.exit(0);
