// Probe (Deno): what ends a Deno.serve whose graceful shutdown() is waiting on a stuck
// request and on an open streaming response, given that its signal cannot be aborted after
// shutdown(). Run: deno run -A scripts/probes/deno_forced_drain.ts
// Prints what the clients saw, whether server.finished settled, and whether the process ended
// on its own (the parent prints "exited" with the time since the forced step).
// Measured on deno 2.9.6: after the forced step (resolve the stuck request with a 503 +
// Connection: close; error the outer body stream and cancel its source) the /stuck client
// gets the 503, the /sse client's connection closes, server.finished settles, and the child
// exits 0 on its own. Erroring the body without cancelling the source leaves the source's
// interval timer running and the process alive.
import { connect } from "node:net";

if (Deno.args[0] !== "child") {
  const cmd = new Deno.Command(Deno.execPath(), { args: ["run", "-A", new URL(import.meta.url).pathname, "child"], stdout: "inherit", stderr: "inherit" });
  const started = performance.now();
  const child = cmd.spawn();
  const killer = setTimeout(() => { console.log("parent: child still alive after 8 s: killing"); child.kill("SIGKILL"); }, 8000);
  const status = await child.status;
  clearTimeout(killer);
  console.log(`parent: child exited code=${status.code} after ${Math.round(performance.now() - started)} ms`);
  Deno.exit(0);
}

let resolveStuck!: (r: Response) => void;
let streamController!: ReadableStreamDefaultController<Uint8Array>;
let innerTicks = 0;
let forceStream!: (reason: unknown) => void;
const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, (req) => {
  const path = new URL(req.url).pathname;
  if (path === "/stuck") return new Promise<Response>((r) => (resolveStuck = r));
  // The user's stream: ticks on its own timer until cancelled.
  let timer: ReturnType<typeof setInterval> | undefined;
  const inner = new ReadableStream<Uint8Array>({
    start(c) { timer = setInterval(() => { innerTicks++; c.enqueue(new TextEncoder().encode("data: tick\n\n")); }, 100); },
    cancel() { clearInterval(timer); console.log("child: inner stream cancelled (timer cleared)"); },
  });
  const reader = inner.getReader();
  forceStream = (reason) => { streamController.error(reason); reader.cancel(reason).catch(() => {}); };
  const outer = new ReadableStream<Uint8Array>({
    start(c) { streamController = c; },
    async pull(c) { const { done, value } = await reader.read(); if (done) c.close(); else c.enqueue(value); },
    cancel(reason) { return reader.cancel(reason); },
  });
  return new Response(outer, { headers: { "content-type": "text/event-stream" } });
});
const port = server.addr.port;

function client(path: string): Promise<string> {
  return new Promise((resolve) => {
    const s = connect(port, "127.0.0.1");
    let got = "";
    s.on("data", (d) => (got += d.toString("latin1")));
    s.on("close", () => resolve(got));
    s.on("error", () => {});
    s.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`);
  });
}
const stuck = client("/stuck");
const sse = client("/sse");
await new Promise((r) => setTimeout(r, 300));
let finished = false;
server.finished.then(() => { finished = true; console.log("child: server.finished settled"); });
void server.shutdown();
await new Promise((r) => setTimeout(r, 300));
console.log(`child: after shutdown() 300 ms: finished=${finished}`);
// The forced step: answer the stuck request, error the open stream and cancel its source.
resolveStuck(new Response("Service Unavailable", { status: 503, headers: { connection: "close" } }));
const reason = new DOMException("drain window ran out", "AbortError");
forceStream(reason);
const results = await Promise.race([Promise.all([stuck, sse]), new Promise<null>((r) => setTimeout(() => r(null), 2000))]);
if (results === null) console.log("child: clients still open 2 s after the forced step");
else {
  console.log(`child: /stuck client saw: ${JSON.stringify(results[0].split("\r\n")[0])}, connection closed`);
  console.log(`child: /sse client saw ${results[1].split("data: tick").length - 1} ticks, then the connection closed`);
}
await new Promise((r) => setTimeout(r, 100));
console.log(`child: finished=${finished}, inner ticks=${innerTicks}; nothing else holds the process now`);
