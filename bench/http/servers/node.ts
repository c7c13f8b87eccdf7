// Benchmark servers on Node 20 (run from the tsc build, see scripts/bench.mjs):
//   node node.js <variant> [concurrencyLimit|-] [out-file|-]
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { serve as honoNodeServe } from "@hono/node-server";
import { getConnInfo } from "@hono/node-server/conninfo";
import { createNodeHost, serve } from "../../../src/adapters/node/mod.ts";
import {
  allGates, announce, args, BODY, burn, counter, helloApp, IO_BURN_MS, IO_WAIT_MS, OVERLOAD_CAP, helloHandler, holdHandler, HOLD_PATH, HOT_CAP, hygieneApp, inFlightCap, noopMiddlewareApp, peerApp, REFUSAL_BODY,
  REFUSAL_HEADERS, refuseFetch, refusalGates, WAITED_REFUSAL_MS, serveDrain, serveLib, sleep, turn, workHandler,
} from "./_shared.ts";

const { variant, limit, out } = args(process.argv.slice(2));
const HOST = "127.0.0.1";

/**
 * node:http with nothing in front: the same handlers, written natively. Returns a promise that
 * settles when the answer is written, so the 15-line cap counts it in flight until then.
 */
function rawHandler(req: IncomingMessage, res: ServerResponse): void | Promise<void> {
  counter.admitted++;
  const headers: Record<string, string> = { "content-type": "text/plain" };
  const t = req.headers["x-t"];
  if (typeof t === "string") headers["x-t"] = t;
  const end = (body: string) => void res.writeHead(200, headers).end(body);
  if (req.url === "/burn") {
    burn();
    end("ok");
  } else if (req.url === "/burn-async") {
    return turn().then(() => {
      burn();
      end("ok");
    });
  } else if (req.url === "/io") {
    return sleep(IO_WAIT_MS).then(() => {
      burn(IO_BURN_MS);
      end("ok");
    });
  } else if (req.url === "/slow") return sleep(10).then(() => end("ok"));
  else end(BODY);
}

/** Binds a Hono fetch to @hono/node-server, the way Hono's docs serve an app on Node. */
function onHonoNodeServer(fetch: (request: Request, env: unknown) => Response | Promise<Response>) {
  const server = honoNodeServe({ fetch, port: 0, hostname: HOST }, (info) => announce(info.port));
  return server;
}

/** node:http listening with `handler`. */
function rawServer(handler: (req: IncomingMessage, res: ServerResponse) => unknown) {
  // probe.mjs sends SIGTERM to a server run with BENCH_NODE_FLAGS: exit, so a --cpu-prof is written.
  process.once("SIGTERM", () => process.exit(0));
  const http = createServer(handler);
  http.listen(0, HOST, () => announce((http.address() as { port: number }).port));
}

/**
 * A diagnostic (probe.mjs `--variant=hold-queue`), not a subject of run.mjs: serve-hygiene's
 * queueing policy under a closed-loop storm, written natively around node:http with none of
 * its path. `limit` requests run at once; the others wait, the newest served first, and a
 * waiter is refused once it has waited 500 ms (the default `shedWaitMs`). Set against `lib`
 * at a fixed limit, it separates what the policy costs from what serve-hygiene's path costs.
 */
function holdQueue(limit: number, handler: typeof rawHandler, refuse: (req: IncomingMessage, res: ServerResponse) => void) {
  const waiting: { at: number; run: () => void; refuse: () => void }[] = [];
  let inFlight = 0;
  const run = (req: IncomingMessage, res: ServerResponse) => {
    inFlight++;
    void Promise.resolve(handler(req, res)).finally(() => {
      inFlight--;
      waiting.pop()?.run();
    });
  };
  setInterval(() => {
    const now = performance.now();
    while (waiting[0] !== undefined && now - waiting[0].at >= 500) waiting.shift()?.refuse();
  }, 10);
  return (req: IncomingMessage, res: ServerResponse) => {
    if (inFlight < limit) run(req, res);
    else waiting.push({ at: performance.now(), run: () => run(req, res), refuse: () => refuse(req, res) });
  };
}

const hello = (_req: IncomingMessage, res: ServerResponse) => void res.writeHead(200, { "content-type": "text/plain" }).end(BODY);
const refuse = (_req: IncomingMessage, res: ServerResponse) => void res.writeHead(503, REFUSAL_HEADERS).end(REFUSAL_BODY);
/** Part 6: `/hold` never settles (holds the cap's one slot); anything else answers hello. */
const hold = (req: IncomingMessage, res: ServerResponse) => (req.url === HOLD_PATH ? new Promise<void>(() => {}) : hello(req, res));

switch (variant) {
  case "raw": // (a)
    rawServer(hello);
    break;
  case "cap": // (a2) the 15-line in-flight cap around (a), never tripping
    rawServer(inFlightCap(HOT_CAP, hello, refuse));
    break;
  case "cap-hold": // part 6: the 15-line cap at 1, its slot held by /hold: every other request refused
    rawServer(inFlightCap(1, hold, refuse));
    break;
  case "cap-hold-fetch": // part 6, (r3): the same cap around a fetch handler on @hono/node-server, the translation serve() uses
    onHonoNodeServer(inFlightCap(1, holdHandler, refuseFetch));
    break;
  case "guard-hold": // part 6: the adapter, every gate on, concurrency limit 1 held by /hold
  case "guard-hold-wait": { // part 6, (r4): the same, but each request waits 2 ms for the held permit before its refusal
    const wait = variant === "guard-hold-wait" ? { shedWaitMs: WAITED_REFUSAL_MS } : {};
    const handle = await serve(holdHandler, { ...refusalGates(), ...wait, port: 0, hostname: HOST });
    announce(handle.address.port);
    break;
  }
  case "none": // the unprotected server of part 2
    rawServer(rawHandler);
    break;
  case "none-fetch": // a diagnostic (goodput_parts.mjs `fetch`): part 2's handler as a fetch handler on @hono/node-server, unprotected
    onHonoNodeServer(workHandler);
    break;
  case "cap-work": // part 2: the 15-line cap at 32 around the unprotected server
    rawServer(inFlightCap(OVERLOAD_CAP, rawHandler, refuse));
    break;
  case "hold-queue": // a diagnostic: serve-hygiene's queueing policy alone (see holdQueue)
    rawServer(holdQueue(limit ?? 4, rawHandler, refuse));
    break;
  case "guard": { // (b) the adapter, every gate on
    const handle = await serve(helloHandler, { ...allGates(), port: 0, hostname: HOST });
    announce(handle.address.port);
    break;
  }
  case "hono": // (c) Hono on the raw server: @hono/node-server
    onHonoNodeServer(helloApp().fetch);
    break;
  case "hono-noop": // (c2) Hono + one no-op middleware, on @hono/node-server
    onHonoNodeServer(noopMiddlewareApp().fetch);
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
