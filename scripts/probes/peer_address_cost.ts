// Probe (all three runtimes): what reading one request's peer address costs. A keyed gate on
// the client's address (a per-IP rate limit, a per-key in-flight cap) needs the peer of every
// request, and each runtime hands it over its own way: Bun through `server.requestIP(request)`,
// Deno through the handler info's `remoteAddr`, Node through the socket's `remoteAddress`.
// One real request is held open on a server on 127.0.0.1; inside its handler the peer is read
// 100,000 times (each read as a keyed gate does it: a fresh request would pay it once), and
// the probe prints ns per read next to what the same server spends on a whole request.
// Run: bun run scripts/probes/peer_address_cost.ts | deno run -A scripts/probes/peer_address_cost.ts
//      | node --import tsx scripts/probes/peer_address_cost.ts
// Measured (Bun 1.4.5, Deno 2.9.6, Node 20.20, pinned to one core, two runs each): Bun
// 2,050 ns a read — a getpeername(2) system call every time (strace -c: 100,000 calls for
// 100,000 reads), about 17 % of the 12.5 µs of server CPU a whole plain request costs there,
// so with a per-IP key Bun's serve() cannot come within 1.10× of a raw Bun.serve that never
// asks; Deno 280–300 ns (an op call a read, ~2.5 % of its 11.5 µs); Node 66 ns (the socket's
// address, asked of the kernel once per connection). Again on 6 December 2026 (the machine in
// a faster state: a raw Bun.serve request 4.4 µs of CPU in part 1): Bun 445–448 ns a read,
// ~10 % of a request (part 1's raw server reading it: 1.12×); Deno 128–210 ns.
import { createServer } from "node:http";

declare const Deno: { serve: (o: unknown, h: (r: Request, info: { remoteAddr: { hostname: string } }) => Response) => { shutdown(): Promise<void>; addr: { port: number } } } | undefined;
declare const Bun: { serve: (o: unknown) => { port: number; stop(force?: boolean): void } } | undefined;

const READS = 100_000;
const runtime = typeof Deno !== "undefined" ? "deno" : typeof Bun !== "undefined" ? "bun" : "node";

function time(read: () => string | undefined): number {
  let seen = 0;
  for (let i = 0; i < 1000; i++) seen += read()?.length ?? 0; // warm up
  const t0 = performance.now();
  for (let i = 0; i < READS; i++) seen += read()?.length ?? 0;
  const ns = ((performance.now() - t0) * 1e6) / READS;
  if (seen === 0) throw new Error("the peer address was never read");
  return ns;
}

let ns = NaN;
if (runtime === "bun") {
  const server = Bun!.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch(request: Request, srv: { requestIP(r: Request): { address: string } | null }) {
      ns = time(() => srv.requestIP(request)?.address);
      return new Response("ok");
    },
  });
  await (await fetch(`http://127.0.0.1:${server.port}/`)).text();
  server.stop(true);
} else if (runtime === "deno") {
  const server = Deno!.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, (_request, info) => {
    ns = time(() => info.remoteAddr.hostname);
    return new Response("ok");
  });
  await (await fetch(`http://127.0.0.1:${server.addr.port}/`)).text();
  await server.shutdown();
} else {
  const server = createServer((req, res) => {
    ns = time(() => req.socket.remoteAddress);
    res.end("ok");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  await (await fetch(`http://127.0.0.1:${port}/`, { headers: { connection: "close" } })).text();
  server.close();
}
console.log(JSON.stringify({ runtime, reads: READS, nsPerRead: Math.round(ns) }));
