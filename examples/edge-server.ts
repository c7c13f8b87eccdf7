// The example edge server — a placeholder until the adapters and the Hono middleware land:
// a node:http server (which all three runtimes provide) that answers "hello", logs JSON
// lines, and stops on SIGTERM/Ctrl-C through the runtime's own Host.
//   deno run -A examples/edge-server.ts | bun run examples/edge-server.ts | npm start
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { createBunHost } from "../src/adapters/bun/mod.ts";
import { createDenoHost } from "../src/adapters/deno/mod.ts";
import { createNodeHost } from "../src/adapters/node/mod.ts";

// The example picks the adapter for the runtime it finds itself on; the library never sniffs.
const host = typeof Deno !== "undefined" ? createDenoHost() : "Bun" in globalThis ? createBunHost() : createNodeHost();
const log = (msg: string, fields: Record<string, unknown> = {}) => console.log(JSON.stringify({ msg, ...fields }));

const port = Number(process.env.PORT ?? 8000);
const hostname = process.env.HOST ?? "127.0.0.1";
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error(`PORT must be an integer from 0 to 65535: current value is ${JSON.stringify(process.env.PORT)}`);
  process.exit(2);
}

const server = createServer((_req, res) => {
  res.writeHead(200, { "content-type": "text/plain; charset=utf-8" });
  res.end("hello from serve-hygiene\n");
});

server.listen(port, hostname, () => {
  const address = server.address() as AddressInfo;
  log("listening", { hostname: address.address, port: address.port });
});

const uninstall = host.onShutdownSignal((signal) => {
  log("stopping", { signal });
  uninstall();
  server.close(() => log("stopped"));
  server.closeIdleConnections();
});
