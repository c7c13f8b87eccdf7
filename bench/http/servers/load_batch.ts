// A scenario server for the load monitor's batch bound (issue 14 item 3; bench/http/load_batch.mjs):
// the part-2 handlers (/burn, /burn-async) behind serve-hygiene with the adapter of the runtime
// it runs on, every option left at its default except the ones given as JSON in the first
// argument: `{"concurrencyLimit": …, "loadMonitor": …}`.
import type { ServeHandle, ServeOptions } from "../../../src/mod.ts";
import { announce, workHandler } from "./_shared.ts";

type Serve = (handler: (request: Request) => Response | Promise<Response>, options: ServeOptions) => Promise<ServeHandle>;

declare const Deno: { args: string[] } | undefined;
const argv: string[] = typeof Deno !== "undefined" ? Deno.args : process.argv.slice(2);
const given = JSON.parse(argv[0] ?? "{}") as ServeOptions;
const serve: Serve = typeof Deno !== "undefined"
  ? (await import("../../../src/adapters/deno/mod.ts")).serve
  : "Bun" in globalThis
  ? (await import("../../../src/adapters/bun/mod.ts")).serve
  : (await import("../../../src/adapters/node/mod.ts")).serve;
const handle = await serve(workHandler, { port: 0, hostname: "127.0.0.1", log: () => {}, ...given });
announce(handle.address.port);
