// Probe (Deno): does Deno.serve's graceful shutdown() let a request body still being uploaded
// arrive? Run: deno run -A scripts/probes/deno_shutdown_upload.ts
// A bare Deno.serve whose handler reads the body; a client sends the head and 10 of 20
// declared bytes, shutdown() is called, and the client sends the other 10 bytes 500 ms later.
// Measured on deno 2.9.6: the body read fails at once with BadResource ("Cannot read body as
// underlying resource unavailable") and the client gets a 500 — the upload is cut by the
// graceful stop. Node (server.close()) and Bun (server.stop()) let it finish: 200. So the
// adapter calls shutdown() only once the uploads in progress at the stop have ended
// (src/adapters/deno/uploads.ts).
import { connect } from "node:net";

const seen: string[] = [];
const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, async (request) => {
  try {
    const body = await request.arrayBuffer();
    seen.push(`read ${body.byteLength} bytes`);
    return new Response("ok");
  } catch (error) {
    seen.push(`read failed: ${(error as Error).name}: ${(error as Error).message}`);
    throw error;
  }
});
const socket = connect(server.addr.port, "127.0.0.1");
let received = "";
socket.setEncoding("latin1");
socket.on("data", (data: string) => (received += data));
socket.on("error", () => {});
await new Promise((resolve) => socket.once("connect", resolve));
socket.write("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 20\r\n\r\n" + "x".repeat(10));
await new Promise((resolve) => setTimeout(resolve, 100));
const stopped = server.shutdown();
await new Promise((resolve) => setTimeout(resolve, 500));
socket.write("y".repeat(10));
await Promise.race([stopped, new Promise((resolve) => setTimeout(resolve, 2000))]);
await new Promise((resolve) => setTimeout(resolve, 100));
console.log(JSON.stringify({ status: received.split("\r\n")[0], handler: seen }));
socket.destroy();
Deno.exit(0);
