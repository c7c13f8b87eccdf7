// Benchmark servers on Bun: bun run bun.ts <variant> [concurrencyLimit|-] [out-file|-]
import { getConnInfo } from "hono/bun";
import { createBunHost, serve } from "../../../src/adapters/bun/mod.ts";
import {
  allGates, announce, args, helloApp, OVERLOAD_CAP, helloHandler, holdHandler, HOT_CAP, hygieneApp, inFlightCap, noopMiddlewareApp, peerApp, refuseFetch, refusalGates, serveDrain, serveLib, workHandler,
} from "./_shared.ts";

const { variant, limit, out } = args(process.argv.slice(2));
const HOST = "127.0.0.1";

/** Bun.serve with nothing in front (Bun passes the server as Hono's env). */
function raw(fetch: (request: Request, server: Bun.Server<undefined>) => Response | Promise<Response>) {
  const server = Bun.serve({ port: 0, hostname: HOST, fetch });
  announce(server.port!);
}

/** `fetch` after reading the request's peer, as a per-IP gate must (server.requestIP: a system call). */
function withPeer(fetch: (request: Request, server: Bun.Server<undefined>) => Response | Promise<Response>) {
  return (request: Request, server: Bun.Server<undefined>) => {
    if (server.requestIP(request) === null) throw new Error("no peer address");
    return fetch(request, server);
  };
}

switch (variant) {
  case "raw": // (a)
    raw(helloHandler);
    break;
  case "none": // the unprotected server of part 2
    raw(workHandler);
    break;
  case "cap-work": // part 2: the 15-line cap at 32 around the unprotected server
    raw(inFlightCap(OVERLOAD_CAP, workHandler, refuseFetch));
    break;
  case "cap": // (a2) the 15-line in-flight cap around (a), never tripping
    raw(inFlightCap(HOT_CAP, helloHandler, refuseFetch));
    break;
  case "cap-hold": // part 6: the 15-line cap at 1, its slot held by /hold: every other request refused
    raw(inFlightCap(1, holdHandler, refuseFetch));
    break;
  case "cap-hold-peer": // part 6, (r3): as cap-hold, but each request's peer is read first
    raw(withPeer(inFlightCap(1, holdHandler, refuseFetch)));
    break;
  case "guard-hold": { // part 6: the adapter, every gate on, concurrency limit 1 held by /hold
    const handle = await serve(holdHandler, { ...refusalGates(), port: 0, hostname: HOST });
    announce(handle.address.port);
    break;
  }
  case "hono-adapter": { // the app served by the adapter, every gate on
    const handle = await serve(helloApp().fetch, { ...allGates(), port: 0, hostname: HOST });
    announce(handle.address.port);
    break;
  }
  case "guard": {
    const handle = await serve(helloHandler, { ...allGates(), port: 0, hostname: HOST });
    announce(handle.address.port);
    break;
  }
  case "hono":
    raw(helloApp().fetch);
    break;
  case "hono-noop": // (c2) Hono + one no-op middleware
    raw(noopMiddlewareApp().fetch);
    break;
  case "raw-peer": // (a3) (a) reading each request's peer first
    raw(withPeer(helloHandler));
    break;
  case "hono-hygiene":
    raw(hygieneApp(createBunHost({ log: () => {} })).fetch);
    break;
  case "peers":
    raw(peerApp((c) => getConnInfo(c).remote.address ?? "unknown").fetch);
    break;
  case "lib":
    await serveLib(serve, limit);
    break;
  case "drain":
    await serveDrain(serve, out);
    break;
  default:
    console.error(`unknown variant ${variant}`);
    process.exit(2);
}
