// Probe (all three runtimes): how many requests does one stretch between two runs of a 10 ms
// interval timer hold, under a closed-loop storm against a synchronous 2 ms handler? The load
// monitor ends a batch when its probe (that timer) runs, so this is the batch its bound sees.
// Run: node --import tsx scripts/probes/turn_batches.ts | deno run -A scripts/probes/turn_batches.ts
//      | bun run scripts/probes/turn_batches.ts   (needs wrk on PATH; load only to 127.0.0.1)
// Prints, per stretch between ticks: requests handled (p50 / p90 / max) and the span from the
// first handler's start to the last one's end (ms), plus the tick lateness.
import { spawn } from "node:child_process";
import { createServer } from "node:http";

declare const Deno: { serve: (o: object, h: () => Response) => { addr: { port: number }; shutdown(): Promise<void> } } | undefined;
declare const Bun: { serve: (o: object) => { port: number; stop(force?: boolean): void } } | undefined;

const runtime = typeof Deno !== "undefined" ? "deno" : typeof Bun !== "undefined" ? "bun" : "node";
let count = 0;
let first = NaN;
let last = NaN;
const handle = () => {
  const t = performance.now();
  if (count === 0) first = t;
  count++;
  while (performance.now() < t + 2) { /* burn 2 ms */ }
  last = performance.now();
};
const batches: { n: number; span: number; late: number }[] = [];
let tickAt = performance.now();
const probe = setInterval(() => {
  const now = performance.now();
  if (count > 0) batches.push({ n: count, span: last - first, late: now - tickAt - 10 });
  count = 0;
  tickAt = now;
}, 10);

let port: number;
let stop: () => void;
if (runtime === "deno") {
  const s = Deno!.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, () => (handle(), new Response("ok")));
  port = s.addr.port;
  stop = () => void s.shutdown();
} else if (runtime === "bun") {
  const s = Bun!.serve({ port: 0, hostname: "127.0.0.1", fetch: () => (handle(), new Response("ok")) });
  port = s.port;
  stop = () => s.stop(true);
} else {
  const s = createServer((_req, res) => (handle(), res.end("ok")));
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  port = (s.address() as { port: number }).port;
  stop = () => (s.closeAllConnections(), s.close());
}

const wrk = spawn("wrk", ["-t1", "-c256", "-d3s", `http://127.0.0.1:${port}/`], { stdio: "ignore" });
await new Promise((r) => wrk.once("exit", r));
clearInterval(probe);
stop();
const q = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))]!;
const ns = batches.map((b) => b.n), spans = batches.map((b) => b.span), late = batches.map((b) => b.late);
console.log(`${runtime}: ${batches.length} stretches between ticks; requests per stretch p50 ${q(ns, 50)} p90 ${q(ns, 90)} max ${q(ns, 100)}; ` +
  `span ms p50 ${q(spans, 50).toFixed(1)} p90 ${q(spans, 90).toFixed(1)} max ${q(spans, 100).toFixed(1)}; tick late ms p50 ${q(late, 50).toFixed(1)} max ${q(late, 100).toFixed(1)}`);
process.exit(0);
