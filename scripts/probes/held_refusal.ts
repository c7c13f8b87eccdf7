// Probe (all three runtimes): what does a 503 cost when the request was held before it — as the
// admission queue holds a waiter until `shedWaitMs` — against one answered at once? The
// runtime's own HTTP server answers every request 503 after W ms (a timer; W = 0: at once),
// with no serve-hygiene in it; wrk keeps 256 keep-alive connections asking (a closed loop: each
// refused client asks again at once, as in the overload benchmark). Reported: the server
// process's CPU (every thread: process.cpuUsage) per answer, and its share of one core.
// Run (loopback only; wrk on core 0, the server on core 1, as the benchmark pins them):
//   taskset -c 1 node --import tsx scripts/probes/held_refusal.ts
//   taskset -c 1 deno run -A scripts/probes/held_refusal.ts
//   taskset -c 1 bun run scripts/probes/held_refusal.ts
// Measured 2026-12-03 (Node 20.20, Deno 2.9.6, Bun 1.4.5; 2-core EPYC; medians of 3 runs of
// 4 s), CPU µs per 503 (share of a core):
//   held      at once          100 ms           500 ms          2000 ms
//   Node      27.1 (99 %)      44.3 (10.9 %)    62.1 (2.7 %)    252 (1.6 %)
//   Deno      12.6 (99 %)      54.1 (13.2 %)    52.9 (2.3 %)    109 (0.8 %)
//   Bun       12.8 (99 %)      27.9 (6.9 %)     35.0 (1.6 %)    54.5 (0.7 %)
// So a held answer costs 2–4× one given at once (more the longer it is held, most on Node),
// but in a closed loop a held client asks again only when answered: at 500 ms the 256 clients
// cost 2–3 % of a core, against all of it when refused at once. (Each run starts once the
// warm-up's held answers have gone out to its closed connections: counted in, they read
// ~240 µs a 503 at 500 ms on Node.)

import { spawn } from "node:child_process";

declare const Deno: { serve: (o: object, h: () => Response | Promise<Response>) => { addr: { port: number }; shutdown(): Promise<void> } } | undefined;
declare const Bun: { serve: (o: object) => { port: number; stop(force?: boolean): void } } | undefined;

const runtime = typeof Deno !== "undefined" ? "deno" : typeof Bun !== "undefined" ? "bun" : "node";
const HELD_MS = [0, 100, 500, 2000];
const CONNECTIONS = 256;
const SECONDS = 4;
const RUNS = 3;

let heldMs = 0;
const refuse = () => new Response("Service Unavailable", { status: 503, headers: { "content-type": "text/plain; charset=utf-8", "retry-after": "1" } });
const answer = (): Response | Promise<Response> => (heldMs === 0 ? refuse() : new Promise((resolve) => setTimeout(() => resolve(refuse()), heldMs)));

async function start(): Promise<number> {
  if (runtime === "deno") return Deno!.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, answer).addr.port;
  if (runtime === "bun") return Bun!.serve({ port: 0, hostname: "127.0.0.1", fetch: answer }).port;
  const { createServer } = await import("node:http");
  const s = createServer((_req, res) => {
    const send = () => void res.writeHead(503, { "content-type": "text/plain; charset=utf-8", "retry-after": "1" }).end("Service Unavailable");
    if (heldMs === 0) send();
    else setTimeout(send, heldMs);
  });
  s.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => s.listen(0, "127.0.0.1", resolve));
  return (s.address() as { port: number }).port;
}

/** wrk on core 0 for `seconds`: the number of answers it got. */
function wrk(port: number, seconds: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn("taskset", ["-c", "0", "wrk", "-t1", `-c${CONNECTIONS}`, `-d${seconds}s`, `http://127.0.0.1:${port}/`]);
    let out = "";
    child.stdout.on("data", (d: Uint8Array) => void (out += new TextDecoder().decode(d)));
    child.on("error", reject);
    child.on("close", () => {
      const m = out.match(/(\d+) requests in/);
      if (m === null) reject(new Error(`wrk printed no request count:\n${out}`));
      else resolve(Number(m[1]));
    });
  });
}

const cpuMicros = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const port = await start();
const rows: string[] = [];
for (const held of HELD_MS) {
  heldMs = held;
  const perAnswer: number[] = [];
  const share: number[] = [];
  for (let run = 0; run < RUNS; run++) {
    await wrk(port, 1); // warm-up; its connections close, and the held answers still out go nowhere
    await new Promise((resolve) => setTimeout(resolve, held + 200));
    const c0 = cpuMicros();
    const t0 = performance.now();
    const answers = await wrk(port, SECONDS);
    const cpu = cpuMicros() - c0;
    perAnswer.push(cpu / answers);
    share.push(cpu / ((performance.now() - t0) * 1000));
  }
  rows.push(`${runtime} held ${String(held).padStart(4)} ms: ${median(perAnswer).toFixed(1).padStart(6)} µs of CPU per 503, ${(median(share) * 100).toFixed(1).padStart(5)} % of a core`);
  console.log(rows.at(-1));
}
process.exit(0);
