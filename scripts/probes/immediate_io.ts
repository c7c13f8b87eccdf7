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
// A third chain resumes on an op that completes off the main thread, an empty SHA-1 digest
// (no permission needed). 2026-12-03: Deno 0 3 1 0 0, 19 µs a link with nothing burned against
// 2,113 µs for a 0 ms timer's (nested timers clamp); Node 0 1 1 1 1, 38 µs; Bun 10 10 10 10 10,
// 5.8 µs. On Deno it does let I/O in. Tried as the Deno Host's
// setImmediate on the overload benchmark's /burn storm (3 interleaved pairs): goodput +2–7 %,
// refusals −94 %, but admitted p99 57 → 160–270 ms, with the load monitor's probe running
// ~43 ms late while the chain ran. Not adopted (bench/README.md, part 2).

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
  const empty = new Uint8Array(0);
  const digest = (fn: () => void) => void crypto.subtle.digest("SHA-1", empty).then(fn);
  const results: Record<string, (number | "after")[]> = { setImmediate: [], "setTimeout 0": [], "SHA-1 digest": [] };
  for (let i = 0; i < 5; i++) {
    if (immediate !== undefined) results.setImmediate!.push(await answeredAt(server.port, (fn) => void immediate(fn)));
    results["setTimeout 0"]!.push(await answeredAt(server.port, (fn) => void setTimeout(fn, 0)));
    results["SHA-1 digest"]!.push(await answeredAt(server.port, digest));
  }
  console.log(`${runtime}: the answer arrived during link … of ${LINKS} (5 tries each)`);
  for (const [chain, links] of Object.entries(results)) console.log(`  ${chain.padEnd(12)} ${links.join(", ") || "(none: no setImmediate)"}`);
  // What a link costs with nothing to burn: the wait a slice resumed this way would pay.
  const links = 2000;
  for (const [chain, next] of [["setTimeout 0", (fn: () => void) => void setTimeout(fn, 0)], ["SHA-1 digest", digest]] as const) {
    const t0 = performance.now();
    await new Promise<void>((resolve) => {
      let k = 0;
      const step = () => (++k === links ? resolve() : next(step));
      next(step);
    });
    console.log(`  ${chain.padEnd(12)} ${(((performance.now() - t0) * 1000) / links).toFixed(1)} µs a link, nothing burned`);
  }
} finally {
  await server.stop();
}
