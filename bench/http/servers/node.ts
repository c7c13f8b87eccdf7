// Benchmark servers on Node 20 (run from the tsc build, see scripts/bench.mjs):
//   node node.js <variant> [concurrencyLimit|-] [out-file|-]
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { serve as honoNodeServe } from "@hono/node-server";
import { getConnInfo } from "@hono/node-server/conninfo";
import { createConnectionGate, resolveConfig } from "../../../src/core/mod.ts";
import { createNodeHost, serve } from "../../../src/adapters/node/mod.ts";
import { listenNode } from "../../../src/adapters/node/server.ts";
import { allGates, announce, args, BODY, burn, counter, helloApp, helloHandler, hygieneApp, peerApp, serveDrain, serveLib, sleep, turn, workHandler } from "./_shared.ts";

const { variant, limit, out } = args(process.argv.slice(2));
const HOST = "127.0.0.1";

/** node:http with nothing in front: the same handlers, written natively. */
function rawHandler(req: IncomingMessage, res: ServerResponse) {
  counter.admitted++;
  const headers: Record<string, string> = { "content-type": "text/plain" };
  const t = req.headers["x-t"];
  if (typeof t === "string") headers["x-t"] = t;
  const end = (body: string) => res.writeHead(200, headers).end(body);
  if (req.url === "/burn") {
    burn();
    end("ok");
  } else if (req.url === "/burn-async") {
    void turn().then(() => {
      burn();
      end("ok");
    });
  } else if (req.url === "/slow") void sleep(10).then(() => end("ok"));
  else end(BODY);
}

/** Binds a Hono fetch to @hono/node-server, the way Hono's docs serve an app on Node. */
function onHonoNodeServer(fetch: (request: Request, env: unknown) => Response | Promise<Response>) {
  const server = honoNodeServe({ fetch, port: 0, hostname: HOST }, (info) => announce(info.port));
  return server;
}

/** serve-hygiene's node:http translation alone: no guard, no gates. */
async function onTranslation(fetch: (request: Request) => Response | Promise<Response>) {
  const server = await listenNode({ log: () => {} })((request) => Promise.resolve(fetch(request)), { port: 0, hostname: HOST, config: resolveConfig({}), connections: createConnectionGate({ maxConnections: Infinity }) });
  announce(server.address.port);
}

switch (variant) {
  case "raw": { // (a)
    const http = createServer((_req, res) => res.writeHead(200, { "content-type": "text/plain" }).end(BODY));
    http.listen(0, HOST, () => announce((http.address() as { port: number }).port));
    break;
  }
  case "none": { // the unprotected server of part 2
    const http = createServer(rawHandler);
    http.listen(0, HOST, () => announce((http.address() as { port: number }).port));
    break;
  }
  case "guard": { // (b) the adapter, every gate on
    const handle = await serve(helloHandler, { ...allGates(), port: 0, hostname: HOST });
    announce(handle.address.port);
    break;
  }
  case "translate": // the adapter's translation without the guard (diagnostic)
    await onTranslation(helloHandler);
    break;
  case "hono": // (c) Hono on the raw server: @hono/node-server
    onHonoNodeServer(helloApp().fetch);
    break;
  case "hono-translate": // the same app on serve-hygiene's translation, no guard
    await onTranslation(helloApp().fetch);
    break;
  case "hono-hygiene": // (d) the app behind hygiene(), on @hono/node-server
    onHonoNodeServer(hygieneApp(createNodeHost({ log: () => {} })).fetch);
    break;
  case "hono-adapter": { // the app served by serve-hygiene/node, every gate on
    const handle = await serve(helloApp().fetch, { ...allGates(), port: 0, hostname: HOST });
    announce(handle.address.port);
    break;
  }
  case "peers": // (e) hono-rate-limiter + hono/body-limit + hono/timeout on @hono/node-server
    onHonoNodeServer(peerApp((c) => getConnInfo(c).remote.address ?? "unknown").fetch);
    break;
  case "lib": // part 2: serve-hygiene/node with its defaults and the given concurrency limit
    await serveLib(serve, limit);
    break;
  case "drain": // part 4: defaults; on SIGTERM drain, report, exit with the outcome's code
    await serveDrain(serve, out);
    break;
  default:
    console.error(`unknown variant ${variant}`);
    process.exit(2);
}
