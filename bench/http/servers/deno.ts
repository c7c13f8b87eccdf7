// Benchmark servers on Deno: deno run -A deno.ts <variant> [concurrencyLimit|-] [out-file|-]
import { getConnInfo } from "hono/deno";
import { createDenoHost, serve } from "../../../src/adapters/deno/mod.ts";
import { allGates, announce, args, helloApp, helloHandler, hygieneApp, peerApp, serveDrain, serveLib, workHandler } from "./_shared.ts";

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
  case "guard": { // (b) the adapter, every gate on
    const handle = await serve(helloHandler, { ...allGates(), port: 0, hostname: HOST });
    announce(handle.address.port);
    break;
  }
  case "hono": // (c)
    raw(helloApp().fetch);
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
