// Benchmark servers on Deno: deno run -A deno.ts <variant> [concurrencyLimit|-] [out-file|-]
import { writeFileSync } from "node:fs";
import { getConnInfo } from "hono/deno";
import { createDenoHost, serve } from "../../../src/adapters/deno/mod.ts";
import { allGates, announce, args, counter, helloApp, helloHandler, hygieneApp, peerApp, workHandler } from "./_shared.ts";

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
  case "lib": {
    const handle = await serve(workHandler, { port: 0, hostname: HOST, concurrencyLimit: limit, log: () => {} });
    announce(handle.address.port);
    break;
  }
  case "drain": {
    const started = Date.now();
    const handle = await serve(workHandler, {
      port: 0,
      hostname: HOST,
      log: () => {},
      exitOnDrained: true,
      onDrained: () => out && writeFileSync(out, JSON.stringify({ admitted: counter.admitted, ranMs: Date.now() - started })),
    });
    handle.finished.then((o) => out && writeFileSync(`${out}.outcome`, JSON.stringify(o)));
    announce(handle.address.port);
    break;
  }
  default:
    console.error(`unknown variant ${variant}`);
    Deno.exit(2);
}
