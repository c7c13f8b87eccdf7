// Benchmark servers on Deno: deno run -A deno.ts <variant> [concurrencyLimit|-] [out-file|-]
import { getConnInfo } from "hono/deno";
import { createDenoHost, serve } from "../../../src/adapters/deno/mod.ts";
import {
  allGates, announce, args, helloApp, OVERLOAD_CAP, helloHandler, holdHandler, HOT_CAP, hygieneApp, inFlightCap, noopMiddlewareApp, peerApp, refuseFetch, refusalGates, serveDrain, serveLib, workHandler,
} from "./_shared.ts";

const { variant, limit, out } = args(Deno.args);
const HOST = "127.0.0.1";

/** Deno.serve with nothing in front. */
function raw(handler: Deno.ServeHandler) {
  Deno.serve({ port: 0, hostname: HOST, onListen: ({ port }) => announce(port) }, handler);
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
  case "guard": { // (b) the adapter, every gate on
    const handle = await serve(helloHandler, { ...allGates(), port: 0, hostname: HOST });
    announce(handle.address.port);
    break;
  }
  case "hono": // (c)
    raw(helloApp().fetch);
    break;
  case "hono-noop": // (c2) Hono + one no-op middleware
    raw(noopMiddlewareApp().fetch);
    break;
  case "raw-peer": // (a3) (a) reading each request's peer, as a keyed gate must (info.remoteAddr: an op call)
    raw((_request, info) => {
      if ((info.remoteAddr as Deno.NetAddr).hostname === "") throw new Error("no peer address");
      return helloHandler();
    });
    break;
  case "hono-hygiene": // (d)
    raw(hygieneApp(createDenoHost({ log: () => {} })).fetch);
    break;
  case "peers": // (e)
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
    Deno.exit(2);
}
