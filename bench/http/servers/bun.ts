// Benchmark servers on Bun: bun run bun.ts <variant> [concurrencyLimit|-] [out-file|-]
import { getConnInfo } from "hono/bun";
import { createBunHost, serve } from "../../../src/adapters/bun/mod.ts";
import { allGates, announce, args, helloApp, helloHandler, hygieneApp, peerApp, serveDrain, serveLib, workHandler } from "./_shared.ts";

const { variant, limit, out } = args(process.argv.slice(2));
const HOST = "127.0.0.1";

/** Bun.serve with nothing in front (Bun passes the server as Hono's env). */
function raw(fetch: (request: Request, server: Bun.Server<undefined>) => Response | Promise<Response>) {
  const server = Bun.serve({ port: 0, hostname: HOST, fetch });
  announce(server.port!);
}

switch (variant) {
  case "raw": // (a)
    raw(helloHandler);
    break;
  case "none": // the unprotected server of part 2
    raw(workHandler);
    break;
  case "guard": {
    const handle = await serve(helloHandler, { ...allGates(), port: 0, hostname: HOST });
    announce(handle.address.port);
    break;
  }
  case "hono":
    raw(helloApp().fetch);
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
