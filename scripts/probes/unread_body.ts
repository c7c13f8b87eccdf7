// Probe: what each runtime's own server does with a request body the handler never reads,
// after an early answer (413). Prints one JSON line per variant with the measured facts:
//   sentBeforeClose  bytes of the declared body the client managed to write before the
//                    server closed the connection (or all of them);
//   closed           whether the server ended the connection by itself (no client help);
//   reused           whether a second request on the same connection was answered.
// Run: node --import tsx scripts/probes/unread_body.ts | deno run -A scripts/probes/unread_body.ts
//      | bun run scripts/probes/unread_body.ts
import { connect } from "node:net";
import { createServer } from "node:http";

const DECLARED = 64 * 1024 * 1024;
const CHUNK = new Uint8Array(64 * 1024).fill(120);
const runtime = typeof Deno !== "undefined" ? "deno" : "Bun" in globalThis ? "bun" : "node";

type Variant = { name: string; close: boolean; cancel: boolean; failBody?: boolean; maxBody?: number; chunked?: boolean; status?: number };
const variants: Variant[] = [
  { name: "413, no Connection header", close: false, cancel: false },
  { name: "413 + Connection: close", close: true, cancel: false },
  { name: "413 + Connection: close + body.cancel()", close: true, cancel: true },
  // What the Deno adapter does: the 413's text, then the response body fails.
  { name: "413 + Connection: close, response body fails after its text", close: true, cancel: false, failBody: true },
];
if (runtime === "bun") {
  variants.push({ name: "Bun's own maxRequestBodySize (1 KiB)", close: false, cancel: false, maxBody: 1024 });
  // Bun's ceiling does not bound a chunked body nobody reads: it drains it past the ceiling.
  variants.push({ name: "200 to a chunked body never read, maxRequestBodySize 1 MiB", close: false, cancel: false, maxBody: 1024 * 1024, chunked: true, status: 200 });
}

function handler(v: Variant) {
  return (request: Request) => {
    if (v.cancel) request.body?.cancel().catch(() => {});
    const headers: Record<string, string> = { "content-type": "text/plain" };
    if (v.close) headers.connection = "close";
    if (!v.failBody) return new Response("Content Too Large", { status: v.status ?? 413, headers });
    let sent = false;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent) return controller.error(new Error("drop the connection"));
        sent = true;
        controller.enqueue(new TextEncoder().encode("Content Too Large"));
      },
    });
    return new Response(body, { status: 413, headers });
  };
}

async function listen(v: Variant): Promise<{ port: number; stop: () => void }> {
  if (runtime === "bun") {
    const B = (globalThis as unknown as { Bun: { serve: (o: unknown) => { port: number; stop: (f: boolean) => void } } }).Bun;
    const s = B.serve({ port: 0, hostname: "127.0.0.1", maxRequestBodySize: v.maxBody ?? 128 * 1024 * 1024, fetch: handler(v) });
    return { port: s.port, stop: () => s.stop(true) };
  }
  if (runtime === "deno") {
    const ac = new AbortController();
    const s = Deno.serve({ port: 0, hostname: "127.0.0.1", signal: ac.signal, onListen() {}, onError: () => new Response(null, { status: 500 }) }, handler(v));
    return { port: s.addr.port, stop: () => ac.abort() };
  }
  const s = createServer((req, res) => {
    res.writeHead(413, v.close ? { connection: "close" } : {});
    if (v.failBody) {
      res.write("Content Too Large");
      return void setTimeout(() => res.destroy(), 10);
    }
    res.end("Content Too Large");
  });
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  return { port: (s.address() as { port: number }).port, stop: () => (s.closeAllConnections(), s.close()) };
}

async function probe(v: Variant) {
  const server = await listen(v);
  const sock = connect({ host: "127.0.0.1", port: server.port });
  await new Promise<void>((r) => sock.once("connect", () => r()));
  let received = "";
  let closed = false;
  let sent = 0;
  sock.on("data", (d) => (received += d.toString("latin1")));
  sock.on("error", () => {});
  const closedP = new Promise<void>((r) => sock.on("close", () => ((closed = true), r())));
  const framing = v.chunked ? "Transfer-Encoding: chunked" : `Content-Length: ${DECLARED}`;
  sock.write(`POST /x HTTP/1.1\r\nHost: 127.0.0.1\r\n${framing}\r\n\r\n`);
  const piece = v.chunked ? Buffer.concat([Buffer.from(`${CHUNK.length.toString(16)}\r\n`), CHUNK, Buffer.from("\r\n")]) : CHUNK;
  // Write the body with backpressure until it is all sent or the server ended the connection.
  const started = Date.now();
  while (sent < DECLARED && !closed && Date.now() - started < 10_000) {
    if (!sock.write(piece)) await Promise.race([new Promise((r) => sock.once("drain", r)), closedP, new Promise((r) => setTimeout(r, 500))]);
    if (!closed) sent += CHUNK.length;
  }
  // Give the server a moment to close after the last byte (when it drains) before the reuse test.
  await Promise.race([closedP, new Promise((r) => setTimeout(r, 300))]);
  let reused = false;
  if (!closed) {
    const before = received.length;
    sock.write("GET /again HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    await Promise.race([closedP, new Promise((r) => setTimeout(r, 1000))]);
    reused = received.length > before && /HTTP\/1\.1 \d{3}/.test(received.slice(before));
  }
  const status = /^HTTP\/1\.1 (\d{3})/.exec(received)?.[1];
  const text = received.includes("Content Too Large");
  const connection = /\r\nconnection: ([^\r]*)/i.exec(received)?.[1];
  console.log(JSON.stringify({
    runtime,
    variant: v.name,
    status,
    connection,
    gotText: text,
    sentBeforeClose: sent,
    declared: DECLARED,
    closedByServer: closed && sent < DECLARED,
    reused,
  }));
  sock.destroy();
  server.stop();
}

for (const v of variants) await probe(v);
if (runtime === "deno") Deno.exit(0);
process.exit(0);
