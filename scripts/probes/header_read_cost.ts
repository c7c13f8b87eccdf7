// Probe: what reading a request's headers costs a GET on Bun.serve and Deno.serve (the guard
// would need `request.headers.has("content-length")` to check a GET's declared body; node's
// adapter knows from node's already parsed head at no cost). Sequential loopback GETs; prints
// the mean per request, in µs, of the first header read and of the `has()` call alone.
// Noisy on a shared machine: compare with the baseline (a method read) on the same run.
// Run: deno run -A scripts/probes/header_read_cost.ts | bun run scripts/probes/header_read_cost.ts
const runtime = typeof Deno !== "undefined" ? "deno" : "bun";
let n = 0, baseline = 0, firstRead = 0, hasAlone = 0;
const handler = (request: Request) => {
  const t0 = performance.now();
  void request.method;
  const t1 = performance.now();
  const headers = request.headers;
  const t2 = performance.now();
  const declared = headers.has("content-length");
  const t3 = performance.now();
  baseline += t1 - t0;
  firstRead += t3 - t1;
  hasAlone += t3 - t2;
  n++;
  return new Response(String(declared));
};
const port = runtime === "deno"
  ? Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, handler).addr.port
  : (globalThis as unknown as { Bun: { serve(o: unknown): { port: number } } }).Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: handler }).port;
for (let i = 0; i < 3000; i++) await (await fetch(`http://127.0.0.1:${port}/`)).text();
const us = (total: number) => Number((total / n * 1000).toFixed(2));
console.log(JSON.stringify({ runtime, requests: n, baselineUs: us(baseline), headersThenHasUs: us(firstRead), hasAloneUs: us(hasAlone) }));
if (runtime === "deno") Deno.exit(0);
else process.exit(0);
