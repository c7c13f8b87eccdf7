// Probe: what Deno.serve does with slow clients, and what a server on it can and cannot close.
// Run: deno run -A scripts/probes/deno_slow_connections.ts [seconds=12]
// Prints one line per measured fact. Raw Deno.serve, no library code, loopback only.
//
// 1. slowloris: N connections that send a partial header block and then nothing. Deno has
//    no header deadline and the handler is never called (no request exists yet), so nothing
//    in a program can see or close them: count how many are still open after `seconds`.
// 2. a request body trickled a byte every 250 ms, answered 408 at once. Variants:
//    close     the answer says Connection: close
//    cancel    the handler cancels the body, answers Connection: close
//    fail-now  the answer's body fails right after its text while a body read is pending
//    fail-late the body is cancelled once that pending read finished (the client's next
//              byte), and only then does the answer's body fail: what serve-hygiene's Deno
//              adapter does
import { connect, type Socket } from "node:net";

const seconds = Number(Deno.args[0] ?? 12);
const SLOWLORIS = 200;

const open = (port: number): Promise<Socket> =>
  new Promise((resolve, reject) => {
    const s = connect({ host: "127.0.0.1", port }, () => resolve(s));
    s.once("error", reject);
  });

function failingBody(text: string, before: () => Promise<unknown>): ReadableStream<Uint8Array> {
  let sent = false;
  return new ReadableStream({
    async pull(c) {
      if (!sent) {
        sent = true;
        return c.enqueue(new TextEncoder().encode(text));
      }
      await before();
      c.error(new Error("drop the connection"));
    },
  });
}

const variants = ["close", "cancel", "fail-now", "fail-late"] as const;
type Variant = typeof variants[number];

const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {}, onError: () => new Response(null, { status: 500 }) }, (req) => {
  const variant = new URL(req.url).searchParams.get("v") as Variant;
  const reader = req.body!.getReader();
  // A read pending in Deno, as a handler reading the body would have.
  const pending = reader.read().then(() => reader.read());
  pending.catch(() => {});
  const headers = { connection: "close" };
  switch (variant) {
    case "close":
      return new Response("Request Timeout", { status: 408, headers });
    case "cancel":
      reader.cancel().catch(() => {});
      return new Response("Request Timeout", { status: 408, headers });
    case "fail-now":
      return new Response(failingBody("Request Timeout", () => Promise.resolve()), { status: 408, headers });
    case "fail-late":
      return new Response(failingBody("Request Timeout", () => pending.catch(() => {}).then(() => reader.cancel())), { status: 408, headers });
  }
});
const port = server.addr.port;

const started = Date.now();
const loris = await Promise.all(Array.from({ length: SLOWLORIS }, async () => {
  const s = await open(port);
  s.on("error", () => {});
  s.write("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: 1\r\n");
  return s;
}));

const trickled = await Promise.all(variants.map(async (v) => {
  const s = await open(port);
  let closedAt: number | undefined;
  s.on("error", () => {});
  s.on("close", () => (closedAt = Date.now() - started));
  s.write(`POST /?v=${v} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000000\r\n\r\nab`);
  const timer = setInterval(() => s.destroyed || s.write("z"), 250);
  return { v, s, timer, closed: () => closedAt };
}));

await new Promise((r) => setTimeout(r, seconds * 1000));
const lorisOpen = loris.filter((s) => !s.destroyed && !s.readableEnded).length;
console.log(`deno ${Deno.version.deno}: slowloris: ${lorisOpen} of ${SLOWLORIS} partial-header connections still open after ${seconds} s`);
for (const t of trickled) {
  clearInterval(t.timer);
  const at = t.closed();
  console.log(`deno ${Deno.version.deno}: trickled body answered 408 (${t.v}): ${at === undefined ? `still open after ${seconds} s` : `closed ${at} ms after start`}`);
}
for (const s of [...loris, ...trickled.map((t) => t.s)]) s.destroy();
await server.shutdown();
