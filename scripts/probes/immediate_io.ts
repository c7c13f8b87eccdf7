// Probe (all three runtimes): does `setImmediate` let pending network I/O in? The load gate
// starts requests put off to a later turn in 1 ms slices, one slice an immediate, and counts on
// the loop polling I/O between slices (responses go out, requests come in). Here the runtime's
// own HTTP server answers a request from the same process while a chain of 40 immediates each
// burns 1 ms: if immediates yield to I/O, the answer arrives after a few links of the chain;
// if not, only once the chain ends (link 40). A chain of 0 ms timers is the control.
// Run: node --import tsx scripts/probes/immediate_io.ts | deno run -A scripts/probes/immediate_io.ts
//      | bun run scripts/probes/immediate_io.ts   (loopback only)
// Measured (Node 20.20, Deno 2.9.6, Bun 1.4.5; links of 5 tries): Node, setImmediate 3 1 1 1 1
// and timers 1 1 0 1 1; Bun, 1 4 1 1 1 and 0 0 0 0 0; Deno, 40 40 40 40 40 (its immediates run
// before I/O is polled) and 0 0 0 0 0. So the Deno Host supplies no setImmediate. (Timers are
// no substitute: a 0 ms timer waits ~1–2 ms, which halved goodput when slices resumed on them.)

declare const Deno: { serve: (o: object, h: () => Response) => { addr: { port: number }; shutdown(): Promise<void> } } | undefined;
declare const Bun: { serve: (o: object) => { port: number; stop(force?: boolean): void } } | undefined;

const runtime = typeof Deno !== "undefined" ? "deno" : typeof Bun !== "undefined" ? "bun" : "node";
const LINKS = 40;
const ok = () => new Response("ok");

async function start(): Promise<{ port: number; stop: () => Promise<void> }> {
  if (runtime === "deno") {
    const s = Deno!.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, ok);
    return { port: s.addr.port, stop: () => s.shutdown() };
  }
  if (runtime === "bun") {
    const s = Bun!.serve({ port: 0, hostname: "127.0.0.1", fetch: ok });
    return { port: s.port, stop: async () => s.stop(true) };
  }
  const { createServer } = await import("node:http");
  const s = createServer((_req, res) => void res.end("ok"));
  await new Promise<void>((resolve) => s.listen(0, "127.0.0.1", resolve));
  return { port: (s.address() as { port: number }).port, stop: () => new Promise((resolve) => s.close(() => resolve())) };
}

/** The link of a chain of `LINKS` 1 ms burns during which a request to the server was answered. */
async function answeredAt(port: number, next: (fn: () => void) => void): Promise<number | "after"> {
  let link = 0;
  let at: number | "after" = "after";
  const answered = fetch(`http://127.0.0.1:${port}/`).then(async (r) => {
    await r.text();
    at = link;
  });
  await new Promise<void>((resolve) => {
    const step = () => {
      if (at !== "after" || link === LINKS) return resolve();
      link++;
      const end = performance.now() + 1;
      while (performance.now() < end) { /* burn 1 ms */ }
      next(step);
    };
    next(step);
  });
  await answered;
  return at;
}

const server = await start();
try {
  await (await fetch(`http://127.0.0.1:${server.port}/`)).text(); // a warm connection pool
  const immediate = (globalThis as { setImmediate?: (fn: () => void) => unknown }).setImmediate;
  const results: Record<string, (number | "after")[]> = { setImmediate: [], "setTimeout 0": [] };
  for (let i = 0; i < 5; i++) {
    if (immediate !== undefined) results.setImmediate!.push(await answeredAt(server.port, (fn) => void immediate(fn)));
    results["setTimeout 0"]!.push(await answeredAt(server.port, (fn) => void setTimeout(fn, 0)));
  }
  console.log(`${runtime}: the answer arrived during link … of ${LINKS} (5 tries each)`);
  for (const [chain, links] of Object.entries(results)) console.log(`  ${chain.padEnd(12)} ${links.join(", ") || "(none: no setImmediate)"}`);
} finally {
  await server.stop();
}
