// Probe (all three runtimes, through node:http so the server sees each accepted connection):
// how fast does a busy server accept a burst of new connections? The event loop is kept busy
// with 8 ms burns, one a timer turn, while wrk opens 256 connections at once; the probe prints
// when every 32nd connection was accepted. libuv (Node) accepts one connection per loop turn,
// so there the burst takes ~256 turns; a benchmark's first second carries that wait, which is
// why bench/http/latency.lua also reports the p99 of requests sent after the first second.
// Run: node --import tsx scripts/probes/accept_per_turn.ts | deno run -A scripts/probes/accept_per_turn.ts
//      | bun run scripts/probes/accept_per_turn.ts   (needs wrk on PATH; load only to 127.0.0.1)
// Measured (Node 20.20, Bun 1.4.5, Deno 2.9.6): Node accepted the 256 in 3.5 s (about one per
// turn); Bun in 96 ms; Deno's node:http the first 128 in 28 ms and the rest over 4 s (the
// adapter's Deno.serve has no connection event, so it cannot be probed this way).
import { spawn } from "node:child_process";
import { createServer } from "node:http";

declare const Deno: unknown;
declare const Bun: unknown;
const runtime = typeof Deno !== "undefined" ? "deno" : typeof Bun !== "undefined" ? "bun" : "node";

const CONNECTIONS = 256;
let accepted = 0;
let first = NaN;
const marks: string[] = [];
const server = createServer((_req, res) => void res.end("ok"));
server.on("connection", () => {
  const now = performance.now();
  if (accepted === 0) first = now;
  accepted++;
  if (accepted % 32 === 0) marks.push(`${accepted} at ${Math.round(now - first)} ms`);
});
await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
const port = (server.address() as { port: number }).port;

let busy = true;
const burn = () => {
  const end = performance.now() + 8;
  while (performance.now() < end) { /* burn 8 ms */ }
  if (busy) setTimeout(burn, 0);
};
setTimeout(burn, 0);

const wrk = spawn("wrk", ["-t1", `-c${CONNECTIONS}`, "-d4s", `http://127.0.0.1:${port}/`], { stdio: "ignore" });
await new Promise((resolve) => wrk.once("exit", resolve));
busy = false;
console.log(`${runtime}: ${accepted} of ${CONNECTIONS} connections accepted in 4 s with 8 ms turns; ${marks.join(", ")}`);
server.closeAllConnections?.();
server.close();
process.exit(0);
